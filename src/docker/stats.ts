// Container stats as `docker stats` shows them, computed from one sample of the engine's stats
// call: CPU as a percent of one CPU, memory without reclaimable page cache, network and block I/O.
import type Docker from "dockerode";

export interface ContainerStats {
  cpuPercent: number;
  memoryUsedBytes: number;
  memoryLimitBytes: number;
  networkRxBytes: number;
  networkTxBytes: number;
  blockReadBytes: number;
  blockWriteBytes: number;
  pids: number;
}

export function statsFromSample(sample: Docker.ContainerStats): ContainerStats {
  const cpuDelta = sample.cpu_stats.cpu_usage.total_usage - (sample.precpu_stats?.cpu_usage?.total_usage ?? 0);
  const systemDelta = (sample.cpu_stats.system_cpu_usage ?? 0) - (sample.precpu_stats?.system_cpu_usage ?? 0);
  const cpus = sample.cpu_stats.online_cpus || sample.cpu_stats.cpu_usage.percpu_usage?.length || 1;
  const cpuPercent = cpuDelta > 0 && systemDelta > 0 ? (cpuDelta / systemDelta) * cpus * 100 : 0;
  // Like `docker stats`: page cache the kernel can drop is not counted as used.
  const cache = (sample.memory_stats.stats as Record<string, number> | undefined)?.total_inactive_file ??
    (sample.memory_stats.stats as Record<string, number> | undefined)?.inactive_file ?? 0;
  let rx = 0;
  let tx = 0;
  for (const network of Object.values(sample.networks ?? {})) {
    rx += network.rx_bytes;
    tx += network.tx_bytes;
  }
  let blockRead = 0;
  let blockWrite = 0;
  for (const entry of sample.blkio_stats?.io_service_bytes_recursive ?? []) {
    if (entry.op.toLowerCase() === "read") blockRead += entry.value;
    if (entry.op.toLowerCase() === "write") blockWrite += entry.value;
  }
  return {
    cpuPercent: Math.round(cpuPercent * 100) / 100,
    memoryUsedBytes: Math.max(0, (sample.memory_stats.usage ?? 0) - cache),
    memoryLimitBytes: sample.memory_stats.limit ?? 0,
    networkRxBytes: rx,
    networkTxBytes: tx,
    blockReadBytes: blockRead,
    blockWriteBytes: blockWrite,
    pids: (sample as { pids_stats?: { current?: number } }).pids_stats?.current ?? 0,
  };
}

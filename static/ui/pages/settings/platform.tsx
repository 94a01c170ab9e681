// Settings > Platform: the Docker engines and their state, labelled containers the platform does not
// know, the data disk's free space and the platform's events, the platform's version and how large an
// upload may be. Read-only.
import { api } from "../../api";
import { Table } from "../../components/table";
import { ErrorText, When } from "../../components/text";
import { Spinner, StatusBadge } from "../../components/widgets";
import { useLoad } from "../../session";
import "./platform.css";

interface Machine {
  id: string;
  status: "online" | "unreachable";
  dockerVersion: string | null;
  apiVersion: string | null;
}

interface ReconcileReport {
  at: string;
  unreachableMachines: string[];
  unknownContainers: { machineId: string; id: string; name: string; state: string }[];
  removedContainers: { machineId: string; id: string; name: string; state: string }[];
}

interface PlatformConfig {
  version: string;
  domain: string;
  uploadLimits: { maxUploadBytes: number; maxArchiveEntries: number; maxUncompressedBytes: number };
}

interface DiskSpace {
  totalBytes: number;
  freeBytes: number;
  freePercent: number;
  lowPercent: number;
  low: boolean;
}

interface PlatformEvent {
  id: string;
  type: string;
  at: string;
  message: string;
}

const SHORT_ID_LENGTH = 12;

function byteSize(bytes: number): string {
  const units = ["bytes", "KB", "MB", "GB", "TB"];
  let size = bytes;
  let unit = 0;
  while (size >= 1024 && unit < units.length - 1) {
    size /= 1024;
    unit++;
  }
  return `${Number.isInteger(size) ? size : size.toFixed(1)} ${units[unit]}`;
}

export function PlatformTab() {
  const machines = useLoad(() => api<{ machines: Machine[]; reconcile: ReconcileReport | null }>("GET", "/api/machines"));
  const config = useLoad(() => api<PlatformConfig>("GET", "/api/platform/config"));
  const status = useLoad(() => api<{ disk: DiskSpace; events: PlatformEvent[] }>("GET", "/api/platform/status"));
  return (
    <>
      <h2>Platform</h2>
      <p class="muted">The engines apps and databases run on, this platform's data disk and limits. Read-only.</p>

      <h3>Machines</h3>
      <ErrorText message={machines.error} />
      {!machines.data && !machines.error && <Spinner label="Checking the engines…" />}
      {machines.data && (
        <Table
          caption="Machines"
          headings={["Machine", "Engine", "Docker version"]}
          empty="No machines are configured."
          rows={machines.data.machines.map((machine) => [
            <code>{machine.id}</code>,
            <StatusBadge status={machine.status} />,
            machine.dockerVersion ? `${machine.dockerVersion} (API ${machine.apiVersion ?? "?"})` : "—",
          ])}
        />
      )}

      <h3>Unknown containers</h3>
      {machines.data && <ReconcileSummary report={machines.data.reconcile} />}

      <h3>Data disk</h3>
      <ErrorText message={status.error} />
      {!status.data && !status.error && <Spinner />}
      {status.data && <DiskSummary disk={status.data.disk} events={status.data.events} />}

      <h3>Version and limits</h3>
      <ErrorText message={config.error} />
      {!config.data && !config.error && <Spinner />}
      {config.data && (
        <dl class="platform-facts">
          <dt>Version</dt>
          <dd>{config.data.version}</dd>
          <dt>Apps' domain</dt>
          <dd>
            <code>&lt;subdomain&gt;.{config.data.domain}</code>
          </dd>
          <dt>Largest upload</dt>
          <dd>{byteSize(config.data.uploadLimits.maxUploadBytes)}</dd>
          <dt>Most entries in a ZIP</dt>
          <dd>{config.data.uploadLimits.maxArchiveEntries.toLocaleString()}</dd>
          <dt>Most bytes a ZIP may unpack to</dt>
          <dd>{byteSize(config.data.uploadLimits.maxUncompressedBytes)}</dd>
        </dl>
      )}
    </>
  );
}

function containerRows(containers: ReconcileReport["unknownContainers"]) {
  return containers.map((container) => [
    container.name,
    <code>{container.machineId}</code>,
    container.state,
    <code>{container.id.slice(0, SHORT_ID_LENGTH)}</code>,
  ]);
}

function ReconcileSummary({ report }: { report: ReconcileReport | null }) {
  if (!report) return <p class="empty">The first check of the engines has not run yet.</p>;
  return (
    <>
      <p class="muted">
        Containers that carry the platform's label but belong to no app or database of this workspace are reported,
        never deleted. Those of an app that it neither serves from nor is releasing (a crash mid-release leaves them)
        are removed. Last checked <When iso={report.at} />.
      </p>
      {report.unreachableMachines.length > 0 && (
        <p class="platform-warning">Could not list the containers of: {report.unreachableMachines.join(", ")}.</p>
      )}
      <Table
        caption="Unknown containers"
        headings={["Name", "Machine", "State", "Container id"]}
        empty="None: every labelled container belongs to an app or a database."
        rows={containerRows(report.unknownContainers)}
      />
      <Table
        caption="Removed by the last check"
        headings={["Name", "Machine", "State", "Container id"]}
        empty="None: every app had only the containers it serves from or is releasing."
        rows={containerRows(report.removedContainers)}
      />
    </>
  );
}

function DiskSummary({ disk, events }: { disk: DiskSpace; events: PlatformEvent[] }) {
  return (
    <>
      <dl class="platform-facts">
        <dt>Free space</dt>
        <dd class={disk.low ? "platform-warning" : undefined}>
          {byteSize(disk.freeBytes)} of {byteSize(disk.totalBytes)} ({disk.freePercent}%)
          {disk.low && ` — under ${disk.lowPercent}%: writes will soon be refused`}
        </dd>
      </dl>
      <Table
        caption="Platform events"
        headings={["When", "Event", "What happened"]}
        empty="No events since the platform started."
        rows={events.map((event) => [<When iso={event.at} />, <code>{event.type}</code>, event.message])}
      />
    </>
  );
}

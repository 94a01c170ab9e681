// How the platform reaches an engine: a unix socket or a tcp host (with TLS from a folder of
// PEM files), and which failures mean "the engine cannot be reached" rather than "it said no".
import type Docker from "dockerode";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const CONNECTION_ERRORS = new Set(["ECONNREFUSED", "ENOENT", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENOTFOUND", "ConnectionRefused", "FailedToOpenSocket"]);

export interface DockerConnection {
  /** `unix:///var/run/docker.sock` or `tcp://host:2376`. */
  host?: string;
  /** Folder with ca.pem, cert.pem and key.pem for TLS to a tcp host. */
  tlsCertPath?: string;
}

export function dockerOptions(connection: DockerConnection): Docker.DockerOptions {
  const host = connection.host ?? "unix:///var/run/docker.sock";
  if (host.startsWith("unix://")) return { socketPath: host.slice("unix://".length) };
  const url = new URL(host.replace(/^tcp:/, connection.tlsCertPath ? "https:" : "http:"));
  const options: Docker.DockerOptions = {
    host: url.hostname,
    port: Number(url.port || (connection.tlsCertPath ? 2376 : 2375)),
    protocol: connection.tlsCertPath ? "https" : "http",
  };
  if (connection.tlsCertPath) {
    options.ca = readFileSync(join(connection.tlsCertPath, "ca.pem"));
    options.cert = readFileSync(join(connection.tlsCertPath, "cert.pem"));
    options.key = readFileSync(join(connection.tlsCertPath, "key.pem"));
  }
  return options;
}

export function isConnectionError(error: unknown): boolean {
  const code = (error as { code?: string; errno?: string })?.code;
  return (code !== undefined && CONNECTION_ERRORS.has(code)) || /socket hang up|connect ECONNREFUSED|ENOENT/.test(String((error as Error)?.message));
}

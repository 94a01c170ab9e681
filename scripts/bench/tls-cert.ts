// TLS for the proxy benchmark, with the openssl command line: the certificate nginx and the
// platform both serve, and whether a server resumes TLS 1.3 sessions, which decides what a "new
// connection" costs it under wrk.
import { existsSync } from "node:fs";
import { join } from "node:path";

export interface CertificateFiles {
  certFile: string;
  keyFile: string;
}

/** A self-signed ECDSA P-256 certificate for `*.<domain>`, its own trust anchor. */
export function wildcardCertificate(dir: string, domain: string): CertificateFiles {
  const certFile = join(dir, "cert.pem");
  const keyFile = join(dir, "key.pem");
  const args = ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"];
  args.push("-keyout", keyFile, "-out", certFile, "-subj", `/CN=*.${domain}`, "-addext", `subjectAltName=DNS:*.${domain}`);
  const made = Bun.spawnSync(args, { stdout: "ignore", stderr: "pipe" });
  if (made.exitCode !== 0) throw new Error(`${args.join(" ")} failed:\n${made.stderr.toString()}`);
  return { certFile, keyFile };
}

/**
 * Whether the server on 127.0.0.1:`port` lets a second TLS 1.3 connection resume the first one's
 * session. wrk reuses a connection's session when it reconnects, so against a server that
 * resumes, its new connections skip the certificate signature; against one that does not, every
 * handshake is a full one.
 * Each connection sends one request, as wrk does: a TLS 1.3 server may hold its session tickets
 * back until it first writes (Bun's do), so a connection that only shakes hands gets none.
 */
export async function resumesTls13Sessions(port: number, serverName: string, dir: string): Promise<boolean> {
  const sessionFile = join(dir, `session-${port}.pem`);
  const connect = async (sessionArgs: string[]): Promise<string> => {
    const args = ["openssl", "s_client", "-connect", `127.0.0.1:${port}`, "-servername", serverName, "-tls1_3", "-ign_eof", ...sessionArgs];
    const child = Bun.spawn(args, { stdin: "pipe", stdout: "pipe", stderr: "ignore" });
    child.stdin.write(`HEAD / HTTP/1.1\r\nHost: ${serverName}\r\nConnection: close\r\n\r\n`);
    child.stdin.flush();
    // The tickets come after the handshake: the connection stays open a moment to get them. With
    // -ign_eof, s_client waits for the server to close (Connection: close), within reason.
    await Bun.sleep(500);
    child.stdin.end();
    const giveUp = setTimeout(() => child.kill(), 5_000);
    const [output] = await Promise.all([new Response(child.stdout).text(), child.exited]);
    clearTimeout(giveUp);
    return output;
  };
  await connect(["-sess_out", sessionFile]);
  if (!existsSync(sessionFile)) return false;
  return (await connect(["-sess_in", sessionFile])).includes("Reused,");
}

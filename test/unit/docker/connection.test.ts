import { expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { dockerOptions } from "../../../src/docker/connection";
import { tempDir } from "../../helpers/temp";

test("a unix socket host becomes a socket path", () => {
  expect(dockerOptions({})).toEqual({ socketPath: "/var/run/docker.sock" });
  expect(dockerOptions({ host: "unix:///run/other.sock" })).toEqual({ socketPath: "/run/other.sock" });
});

test("tcp hosts: plain http without certificates, https with the ca/cert/key of the cert path", () => {
  expect(dockerOptions({ host: "tcp://10.0.0.5:2375" })).toEqual({ host: "10.0.0.5", port: 2375, protocol: "http" });
  const certs = tempDir();
  mkdirSync(certs, { recursive: true });
  for (const name of ["ca", "cert", "key"]) writeFileSync(`${certs}/${name}.pem`, `${name}-pem`);
  const tls = dockerOptions({ host: "tcp://engine.example:2376", tlsCertPath: certs });
  expect(tls).toMatchObject({ host: "engine.example", port: 2376, protocol: "https" });
  expect(String(tls.ca)).toBe("ca-pem");
  expect(String(tls.cert)).toBe("cert-pem");
  expect(String(tls.key)).toBe("key-pem");
});

// Which certificate serves a host (src/certificates/served.ts), and the copy of that table the
// proxy's thread keeps: made from the table's changes, it must pick the same certificate for every
// host the table does, by the same precedence (uploaded, the platform's own, ACME).
import { beforeAll, expect, test } from "bun:test";
import { X509Certificate } from "node:crypto";
import { ServedCertificates } from "../../../src/certificates/served";
import { makeCa, makeCertificate, type TestCa, type TestPair } from "../../helpers/certificates";

let ca: TestCa;
let own: TestPair;
let shopAcme: TestPair;
let shopUploaded: TestPair;
let blogAcme: TestPair;

beforeAll(async () => {
  ca = await makeCa();
  own = await makeCertificate({ names: ["*.apps.test"], ca });
  shopAcme = await makeCertificate({ names: ["shop.apps.test"], ca });
  shopUploaded = await makeCertificate({ names: ["shop.apps.test"], ca });
  blogAcme = await makeCertificate({ names: ["blog.example.com"], ca });
});

const pairOf = (test: TestPair) => ({ chainPem: test.chainPem, keyPem: test.keyPem });
const fingerprintOf = (test: TestPair) => new X509Certificate(test.leafPem).fingerprint256;
const HOSTS = ["shop.apps.test", "docs.apps.test", "blog.example.com", "other.example.com"];

/** For each host: the fingerprint of the leaf that serves it, where it came from, and whether HTTPS serves it. */
function servedBy(table: ServedCertificates) {
  return HOSTS.map((host) => {
    const served = table.servedFor(host);
    return { host, leaf: served?.info.leaf.fingerprint256 ?? null, source: served?.source ?? null, https: table.servesHttps(host) };
  });
}

test("a copy made from the table's changes, or kept by them, serves each host the certificate the table serves", () => {
  const table = new ServedCertificates();
  table.setStored("shop.apps.test", { pair: pairOf(shopAcme), source: "acme" });
  const kept = new ServedCertificates();
  for (const change of table.changes()) kept.apply(change);
  table.onChange = (change) => kept.apply(change);

  // The own wildcard comes first for the hosts it covers, unless a host has an upload of its own.
  table.setOwn(pairOf(own));
  table.setStored("blog.example.com", { pair: pairOf(blogAcme), source: "acme" });
  expect(servedBy(table).map(({ host, source }) => [host, source])).toEqual([
    ["shop.apps.test", "platform"],
    ["docs.apps.test", "platform"],
    ["blog.example.com", "acme"],
    ["other.example.com", null],
  ]);
  table.setStored("shop.apps.test", { pair: pairOf(shopUploaded), source: "uploaded" });
  table.setStored("docs.apps.test", null);
  const late = new ServedCertificates();
  for (const change of table.changes()) late.apply(change);

  const expected = servedBy(table);
  expect(expected).toEqual([
    { host: "shop.apps.test", leaf: fingerprintOf(shopUploaded), source: "uploaded", https: true },
    { host: "docs.apps.test", leaf: fingerprintOf(own), source: "platform", https: true },
    { host: "blog.example.com", leaf: fingerprintOf(blogAcme), source: "acme", https: true },
    { host: "other.example.com", leaf: null, source: null, https: false },
  ]);
  expect(servedBy(kept)).toEqual(expected);
  expect(servedBy(late)).toEqual(expected);
  expect(kept.defaultPair()).toEqual(pairOf(own));
  expect(kept.secureContextFor("SHOP.apps.test.")).toBeDefined();
  expect(kept.secureContextFor("other.example.com")).toBeUndefined();

  // Removing the last certificate of a host leaves it to the next in line.
  table.setStored("shop.apps.test", null);
  expect(servedBy(kept)[0]!.source).toBe("platform");
});

test("a table with nothing in it serves nothing, and has no default", () => {
  const table = new ServedCertificates();
  expect(table.available()).toBe(false);
  expect(table.defaultPair()).toBeNull();
  expect(table.servesHttps("shop.apps.test")).toBe(false);
  table.setStored("blog.example.com", { pair: pairOf(blogAcme), source: "acme" });
  expect(table.available()).toBe(true);
  expect(table.defaultPair()).toEqual(pairOf(blogAcme));
});

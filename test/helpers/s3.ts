// A real S3-compatible server for the off-site copy tests: s3rver (npm) in the test process, on
// 127.0.0.1 and a free port, storing under a temp dir, with one bucket and a key pair of its own
// (random, so a test can look for it in logs and errors). s3rver checks that the access key id is
// known but not SigV4 signatures, so a wrong secret is not caught here: that is up to a real S3.
import { S3Client } from "bun";
import { createRequire } from "node:module";
import { tempDir } from "./temp";

interface S3rverEvent {
  Records: { eventName: string; s3: { bucket: { name: string }; object: { key: string } } }[];
}

/** The part of s3rver's (untyped) API these tests use; see its README. */
interface S3rverServer {
  run(): Promise<{ port: number }>;
  close(): Promise<void>;
  on(event: "event", listener: (event: S3rverEvent) => void): void;
  off(event: "event", listener: (event: S3rverEvent) => void): void;
  store: { getResourcePath(bucket: string, key: string, resource: string): string };
}
type S3rverOptions = { address: string; port: number; silent: boolean; directory: string; configureBuckets: { name: string }[] };

const require = createRequire(import.meta.url);
const S3rver = require("s3rver") as new (options: S3rverOptions) => S3rverServer;
const { DUMMY_ACCOUNT } = require("s3rver/lib/models/account") as { DUMMY_ACCOUNT: { createKeyPair(id: string, secret: string): void } };

function randomText(alphabet: string, length: number): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(length)), (byte) => alphabet[byte % alphabet.length]).join("");
}

export class TestS3 {
  readonly bucket = "platform-backups";
  readonly accessKeyId = `AKIA${randomText("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)}`;
  readonly secretAccessKey = randomText("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 40);
  readonly directory = tempDir("platform-s3-");
  port = 0;
  private server: S3rverServer | null = null;

  static async start(): Promise<TestS3> {
    const s3 = new TestS3();
    DUMMY_ACCOUNT.createKeyPair(s3.accessKeyId, s3.secretAccessKey);
    await s3.run();
    return s3;
  }

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Starts it (again, on the same port and with the same objects after a stop). */
  async run() {
    if (this.server) return;
    const server = new S3rver({ address: "127.0.0.1", port: this.port, silent: true, directory: this.directory, configureBuckets: [{ name: this.bucket }] });
    this.port = (await server.run()).port;
    this.server = server;
  }

  async stop() {
    const server = this.server;
    this.server = null;
    await server?.close();
  }

  /** The platform's PLATFORM_BACKUP_S3_* settings for this server. */
  settings(overrides: { bucket?: string; prefix?: string } = {}): Record<string, string> {
    return {
      PLATFORM_BACKUP_S3_ENDPOINT: this.endpoint,
      PLATFORM_BACKUP_S3_REGION: "us-east-1",
      PLATFORM_BACKUP_S3_BUCKET: overrides.bucket ?? this.bucket,
      PLATFORM_BACKUP_S3_PREFIX: overrides.prefix ?? "",
      PLATFORM_BACKUP_S3_ACCESS_KEY_ID: this.accessKeyId,
      PLATFORM_BACKUP_S3_SECRET_ACCESS_KEY: this.secretAccessKey,
    };
  }

  /** A client of its bucket, to look at what the platform stored. */
  client(): S3Client {
    return new S3Client({ endpoint: this.endpoint, region: "us-east-1", bucket: this.bucket, accessKeyId: this.accessKeyId, secretAccessKey: this.secretAccessKey });
  }

  /** The keys of the bucket's objects under `prefix` (up to 1,000: plenty for a test). */
  async objectKeys(prefix = ""): Promise<string[]> {
    const listed = await this.client().list({ prefix });
    return (listed.contents ?? []).map((object) => object.key).sort();
  }

  objectExists(key: string): Promise<boolean> {
    return this.client().file(key).exists();
  }

  async objectSha256(key: string): Promise<string> {
    const hash = new Bun.CryptoHasher("sha256");
    for await (const chunk of this.client().file(key).stream()) hash.update(chunk);
    return hash.digest("hex");
  }

  /** The file on disk that holds an object's bytes: a test may change them behind S3's back. */
  objectFile(key: string): string {
    return this.runningServer().store.getResourcePath(this.bucket, key, "object");
  }

  /** Calls `listener` with the name (`ObjectCreated:Put`, `ObjectCreated:Post` for a multipart upload, ...) and key of each event; answers the unsubscribe. */
  onEvent(listener: (eventName: string, key: string) => void): () => void {
    const server = this.runningServer();
    const forward = (event: S3rverEvent) => {
      for (const record of event.Records) listener(record.eventName, record.s3.object.key);
    };
    server.on("event", forward);
    return () => server.off("event", forward);
  }

  private runningServer(): S3rverServer {
    if (!this.server) throw new Error("the S3 server is stopped");
    return this.server;
  }
}

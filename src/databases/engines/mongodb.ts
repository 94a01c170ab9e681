// MongoDB on the official `mongo` image: MONGO_INITDB_ROOT_USERNAME/PASSWORD create the user in
// the `admin` database on first start, MONGO_INITDB_DATABASE names the application database.
// mongosh scripts are fixed text that read the credentials from process.env; mongodump and
// mongorestore read the password from a --config YAML file written just for the command.
// No MongoDB can run on the platform's own test machines: this file is covered by unit tests.
import { parseCountLines, type Credentials, type EngineCommand, type EngineDefinition, type Probe } from "./types";
import { userInfo, yamlString } from "./text";

/** The first bytes of a mongodump archive (its magic number 0x8199e26d, little-endian). */
const ARCHIVE_MAGIC = [0x6d, 0xe2, 0x99, 0x81];

const PORT = 27017;
/** Written just before a dump or restore and removed after it. */
export const MONGO_TOOLS_CONFIG = "/tmp/platform-mongo-tools.yaml";
const RESERVED_DATABASES = new Set(["admin", "local", "config"]);

/** The driver's own limits, so a script ends by itself when the server hangs before or after connecting. */
const CONNECT_TIMEOUTS = "serverSelectionTimeoutMS=5000&connectTimeoutMS=5000";
export const CLIENT_TIMEOUTS = `${CONNECT_TIMEOUTS}&socketTimeoutMS=10000`;

function connectScript(timeouts: string): string {
  return (
    "const env = process.env;" +
    " const uri = 'mongodb://' + encodeURIComponent(env.MONGO_USER) + ':' + encodeURIComponent(env.MONGO_PASSWORD)" +
    ` + '@127.0.0.1:${PORT}/?authSource=admin&${timeouts}';` +
    " const client = new Mongo(uri);"
  );
}
const CONNECT = connectScript(CLIENT_TIMEOUTS);
const PROBE_SCRIPT = `${CONNECT} print(client.getDB(env.MONGO_DATABASE).runCommand({ listCollections: 1, nameOnly: true }).ok);`;
/** `collection<TAB>count` per collection; counting a large one takes longer than a probe may, so no socket timeout. */
const INVENTORY_SCRIPT =
  `${connectScript(CONNECT_TIMEOUTS)} const database = client.getDB(env.MONGO_DATABASE);` +
  " const names = database.getCollectionInfos({ type: 'collection' }).map((info) => info.name).filter((name) => !name.startsWith('system.')).sort();" +
  " for (const name of names) print(name + '\\t' + database.getCollection(name).countDocuments({}));";
const ROTATE_SCRIPT = `${CONNECT} client.getDB('admin').changeUserPassword(env.MONGO_USER, env.MONGO_NEW_PASSWORD); print('OK');`;

function mongosh(script: string, env: Record<string, string>): Pick<EngineCommand, "argv" | "env"> {
  return { argv: ["mongosh", "--nodb", "--quiet", "--norc", "--eval", script], env };
}

function clientEnv(credentials: Credentials): Record<string, string> {
  return { MONGO_USER: credentials.username, MONGO_PASSWORD: credentials.password, MONGO_DATABASE: credentials.databaseName };
}

function probe(credentials: Credentials): Probe {
  return { ...mongosh(PROBE_SCRIPT, clientEnv(credentials)), expectOutput: "1" };
}

/** Options shared by mongodump and mongorestore; the password is in the --config file. */
function toolOptions(credentials: Credentials): string[] {
  return [
    "--host", "127.0.0.1", "--port", String(PORT), "--username", credentials.username,
    "--authenticationDatabase", "admin", `--config=${MONGO_TOOLS_CONFIG}`, "--archive",
  ];
}

function toolFiles(credentials: Credentials): Record<string, string> {
  return { [MONGO_TOOLS_CONFIG]: `password: ${yamlString(credentials.password)}\n` };
}

export const mongodb: EngineDefinition = {
  engine: "mongodb",
  title: "MongoDB",
  defaultVersion: "8",
  officialRepository: "mongo",
  port: PORT,
  capabilities: ["CHOWN", "SETUID", "SETGID", "DAC_OVERRIDE", "FOWNER"],

  // The image declares both as VOLUMEs; mounting both keeps Docker from adding anonymous ones.
  volumes: () => [
    { suffix: "", containerPath: "/data/db" },
    { suffix: "-configdb", containerPath: "/data/configdb" },
  ],

  environment({ credentials }) {
    return {
      MONGO_INITDB_ROOT_USERNAME: credentials.username,
      MONGO_INITDB_ROOT_PASSWORD: credentials.password,
      MONGO_INITDB_DATABASE: credentials.databaseName,
    };
  },

  command: () => undefined,
  configFiles: () => ({}),

  credentialProblems({ databaseName }) {
    return RESERVED_DATABASES.has(databaseName) ? [`'${databaseName}' is a MongoDB system database`] : [];
  },

  connectionString(credentials, host, port) {
    return `mongodb://${userInfo(credentials.username, credentials.password)}@${host}:${port}/${credentials.databaseName}?authSource=admin`;
  },

  readinessProbe: probe,
  passwordProbes: (credentials) => [probe(credentials)],

  rotatePassword(credentials, newPassword) {
    return { ...mongosh(ROTATE_SCRIPT, { ...clientEnv(credentials), MONGO_NEW_PASSWORD: newPassword }), expectOutput: "OK" };
  },

  applyMemory: () => null,

  inventory: (credentials) => mongosh(INVENTORY_SCRIPT, clientEnv(credentials)),
  parseInventory: parseCountLines,

  dump(credentials) {
    return { argv: ["mongodump", ...toolOptions(credentials), `--db=${credentials.databaseName}`], files: toolFiles(credentials) };
  },

  dumpFormat: "archive",
  dumpProblem({ head }) {
    return ARCHIVE_MAGIC.every((byte, index) => head[index] === byte) ? null : "the output is not a mongodump archive";
  },

  restore({ credentials }) {
    return {
      mode: "stream",
      command: {
        argv: ["mongorestore", ...toolOptions(credentials), `--nsInclude=${credentials.databaseName}.*`, "--drop"],
        files: toolFiles(credentials),
      },
    };
  },
};

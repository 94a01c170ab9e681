// Databases: `#/databases` the list, `#/databases/new`, `#/databases/<databaseId>[/<tab>]`.
import "./databases.css";
import { useEffect } from "preact/hooks";
import { api } from "../../api";
import { Field, Form, SelectField } from "../../components/form";
import { Table } from "../../components/table";
import { ErrorText, ReadOnlyNote, When } from "../../components/text";
import { Spinner, StatusBadge } from "../../components/widgets";
import { href } from "../../router";
import { may, useLoad, useSession } from "../../session";
import { DatabasePage } from "./database";
import { everyFewSeconds } from "../../components/backups";
import { ENGINES, engineName, type Database } from "./types";

/** `route` is the hash after `databases`: [], ["new"] or [databaseId, tab?]. */
export function DatabasesSection({ route }: { route: string[] }) {
  const [databaseId, tab = "overview"] = route;
  if (databaseId === "new") return <NewDatabase />;
  if (databaseId) return <DatabasePage key={databaseId} databaseId={databaseId} tab={tab} />;
  return <DatabaseList />;
}

function DatabaseList() {
  const { session } = useSession();
  const canCreate = may(session, "POST /api/databases/");
  const list = useLoad(() => api<{ databases: Database[] }>("GET", "/api/databases/").then(({ databases }) => databases));
  // Statuses move on their own (provisioning -> running): the list follows them.
  useEffect(() => everyFewSeconds(() => void list.reload(), 5000), [list.reload]);
  return (
    <>
      <div class="db-heading">
        <h1>Databases</h1>
        {canCreate && (
          <a class="button primary" href={href("databases", "new")}>
            New database
          </a>
        )}
      </div>
      <ErrorText message={list.error} />
      {!list.data && !list.error && <Spinner />}
      {list.data && (
        <Table
          caption="Databases"
          headings={["Name", "Engine", "Status", "Memory", "Created"]}
          empty={canCreate ? "No databases yet. Create one: PostgreSQL, MySQL, MongoDB or Redis." : "No databases yet."}
          rowKeys={list.data.map((database) => database.id)}
          rows={list.data.map((database) => [
            <a href={href("databases", database.id)}>{database.name}</a>,
            `${engineName(database.engine)} ${database.version}`,
            <StatusBadge status={database.status} />,
            `${database.memoryMB} MB`,
            <When iso={database.createdAt} />,
          ])}
        />
      )}
    </>
  );
}

function NewDatabase() {
  const { session } = useSession();
  const create = async (values: Record<string, string>) => {
    const body: Record<string, unknown> = { name: values.name!.trim(), engine: values.engine };
    if (values.version?.trim()) body.version = values.version.trim();
    if (values.memoryMB) body.memoryMB = Number(values.memoryMB);
    if (values.cpus) body.cpus = Number(values.cpus);
    if (values.storageGB) body.storageGB = Number(values.storageGB);
    // Left out when empty: the API generates them.
    for (const field of ["username", "password", "databaseName"] as const) if (values[field]) body[field] = values[field];
    const { database } = await api<{ database: Database }>("POST", "/api/databases/", body);
    location.hash = href("databases", database.id);
  };
  return (
    <>
      <p>
        <a href={href("databases")}>← Databases</a>
      </p>
      <h1>New database</h1>
      {!may(session, "POST /api/databases/") ? (
        <ReadOnlyNote role={session.role}>can read the workspace's databases, not create them.</ReadOnlyNote>
      ) : (
        <Form class="db-form" label="New database" submitText="Create database" onSubmit={create}>
          <Field label="Name" name="name" required maxLength={63} pattern="[a-z0-9]([a-z0-9\-]{0,61}[a-z0-9])?" placeholder="orders-db"
            hint="Lowercase letters, digits and dashes; also its host name for your apps." />
          <SelectField label="Engine" name="engine" options={ENGINES.map(([value, text, version]) => [value, `${text} (default ${version})`])} />
          <Field label="Version" name="version" maxLength={32} placeholder="Engine's default" hint="The image tag, e.g. 16 for PostgreSQL 16." />
          <Field label="Memory (MB)" name="memoryMB" type="number" min={256} max={262144} step={1} placeholder="512" />
          <Field label="CPUs" name="cpus" type="number" min={0.1} max={16} step={0.1} placeholder="Platform default" hint="0.1 to 16, e.g. 0.5 for half a core." />
          <Field label="Storage (GB)" name="storageGB" type="number" min={1} max={65536} step={1} placeholder="5"
            hint="An allowance: use is measured and warned about, not enforced." />
          <fieldset class="db-credentials">
            <legend>Credentials (optional)</legend>
            <p class="muted">Generated when left empty; set them to keep what an existing app already uses.</p>
            <Field label="User" name="username" maxLength={63} autocomplete="off" spellcheck={false} placeholder="Generated" hint="Lowercase letters, digits and _." />
            <Field label="Password" name="password" type="password" minLength={8} maxLength={128} autocomplete="new-password" placeholder="Generated" hint="At least 8 characters, no spaces." />
            <Field label="Database name" name="databaseName" maxLength={63} autocomplete="off" spellcheck={false} placeholder="From the name" hint="Lowercase letters, digits and _; PostgreSQL, MySQL and MongoDB." />
          </fieldset>
        </Form>
      )}
    </>
  );
}

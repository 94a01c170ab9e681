// A folder of the app's tree: its entries (folders first, with sizes), each renamed or deleted in
// place, forms to create a file or folder in it, and the bulk rename of everything under it; each
// offered only to a role that may do it (a viewer lists names and folders, and opens no file).
import { useState } from "preact/hooks";
import { api, segment } from "../../../api";
import { ActionButton, Field, Form, type FormValues } from "../../../components/form";
import { ErrorText, When } from "../../../components/text";
import { Spinner } from "../../../components/widgets";
import { may, useLoad, useSession } from "../../../session";
import { BulkRename } from "./bulk-rename";
import { filesHref, formatSize, joinPath, parentOf } from "./paths";

interface FileEntry {
  name: string;
  path: string;
  type: "file" | "dir" | "symlink";
  size: number;
  modifiedAt: string;
}

const TYPE_WORDS = { file: "File", dir: "Folder", symlink: "Link" };

function EntryActions({ appId, entry, changed, canMove, canDelete }: { appId: string; entry: FileEntry; changed(): Promise<void>; canMove: boolean; canDelete: boolean }) {
  const [mode, setMode] = useState<"idle" | "rename" | "delete">("idle");
  const [error, setError] = useState("");
  const base = `/api/apps/${segment(appId)}/fs`;
  const rename = async (values: FormValues) => {
    await api("POST", `${base}/move`, { from: entry.path, to: joinPath(parentOf(entry.path), values.name!.trim()) });
    setMode("idle");
    await changed();
  };
  const remove = async () => {
    await api("POST", `${base}/delete`, { path: entry.path });
    await changed();
  };
  if (mode === "rename")
    return (
      <div class="files-inline">
        <Form label={`Rename ${entry.name}`} submitText="Rename" onSubmit={rename}>
          <Field label="New name" name="name" defaultValue={entry.name} required autoFocus />
        </Form>
        <button type="button" onClick={() => setMode("idle")}>Cancel</button>
      </div>
    );
  if (mode === "delete")
    return (
      <div class="files-inline" role="group" aria-label={`Delete ${entry.name}?`}>
        <span>Delete {entry.type === "dir" ? "this folder and everything in it" : "this file"}?</span>
        <ActionButton class="danger" run={remove} onError={setError}>
          Yes, delete {entry.name}
        </ActionButton>
        <button type="button" onClick={() => setMode("idle")}>Cancel</button>
        <ErrorText message={error} />
      </div>
    );
  return (
    <div class="files-row-actions">
      {canMove && <button type="button" aria-label={`Rename ${entry.name}`} onClick={() => setMode("rename")}>Rename</button>}
      {canDelete && <button type="button" aria-label={`Delete ${entry.name}`} onClick={() => setMode("delete")}>Delete</button>}
    </div>
  );
}

function CreateForms({ appId, folder, changed, canCreateFile, canCreateFolder }: { appId: string; folder: string; changed(): Promise<void>; canCreateFile: boolean; canCreateFolder: boolean }) {
  const base = `/api/apps/${segment(appId)}/fs`;
  const createFile = async (values: FormValues, form: HTMLFormElement) => {
    await api("POST", `${base}/file`, { path: joinPath(folder, values.name!.trim()), content: "" });
    form.reset();
    await changed();
  };
  const createFolder = async (values: FormValues, form: HTMLFormElement) => {
    await api("POST", `${base}/folder`, { path: joinPath(folder, values.name!.trim()) });
    form.reset();
    await changed();
  };
  return (
    <div class="files-create">
      {canCreateFile && (
        <Form label="New file" submitText="Create file" onSubmit={createFile}>
          <Field label="New file name" name="name" required placeholder="index.js" />
        </Form>
      )}
      {canCreateFolder && (
        <Form label="New folder" submitText="Create folder" onSubmit={createFolder}>
          <Field label="New folder name" name="name" required placeholder="src" />
        </Form>
      )}
    </div>
  );
}

export function FolderView({ appId, folder }: { appId: string; folder: string }) {
  const { session } = useSession();
  const canOpen = may(session, "GET /api/apps/{appId}/fs/file");
  const canMove = may(session, "POST /api/apps/{appId}/fs/move");
  const canDelete = may(session, "POST /api/apps/{appId}/fs/delete");
  const canCreateFile = may(session, "POST /api/apps/{appId}/fs/file");
  const canCreateFolder = may(session, "POST /api/apps/{appId}/fs/folder");
  const canRename = may(session, "POST /api/apps/{appId}/fs/bulk-rename/preview") && may(session, "POST /api/apps/{appId}/fs/bulk-rename/apply");
  const listing = useLoad(
    () => api<{ entries: FileEntry[] }>("GET", `/api/apps/${segment(appId)}/fs/list?path=${encodeURIComponent(folder)}`).then((answer) => answer.entries),
    [appId, folder],
  );
  const entries = listing.data;
  return (
    <>
      <h3>{folder ? `Folder ${folder}` : "Root folder"}</h3>
      {listing.error ? (
        <ErrorText message={listing.error} />
      ) : !entries ? (
        <Spinner label="Listing the folder…" />
      ) : !entries.length ? (
        <p class="empty">This folder is empty.</p>
      ) : (
        <div class="table-wrap">
          <table class="files-table files-listing">
            <caption class="visually-hidden">Entries of {folder || "the root folder"}</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Type</th>
                <th scope="col">Size</th>
                <th scope="col">Changed</th>
                {(canMove || canDelete) && <th scope="col">Actions</th>}
              </tr>
            </thead>
            <tbody>
              {entries.map((entry) => (
                <tr key={entry.path}>
                  <td>
                    {entry.type === "symlink" || (entry.type === "file" && !canOpen) ? (
                      <span>{entry.name}</span>
                    ) : (
                      <a href={filesHref(appId, entry.type === "dir" ? "folder" : "file", entry.path)}>
                        {entry.name}
                        {entry.type === "dir" ? "/" : ""}
                      </a>
                    )}
                  </td>
                  <td>{TYPE_WORDS[entry.type]}</td>
                  <td>{entry.type === "dir" ? "—" : formatSize(entry.size)}</td>
                  <td>
                    <When iso={entry.modifiedAt} />
                  </td>
                  {(canMove || canDelete) && (
                    <td>
                      <EntryActions appId={appId} entry={entry} changed={listing.reload} canMove={canMove} canDelete={canDelete} />
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {(canCreateFile || canCreateFolder) && <CreateForms appId={appId} folder={folder} changed={listing.reload} canCreateFile={canCreateFile} canCreateFolder={canCreateFolder} />}
      {canRename && <BulkRename appId={appId} folder={folder} changed={listing.reload} />}
    </>
  );
}

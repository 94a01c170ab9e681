// An app's files: the file manager of its kept source tree (browse, edit, create, rename, delete,
// bulk rename), the whole tree as a ZIP, and a redeploy that builds the tree as it is now.
import { useState } from "preact/hooks";
import "./files.css";
import { api, segment } from "../../../api";
import { ActionButton } from "../../../components/form";
import { ErrorText, ReadOnlyNote } from "../../../components/text";
import { href } from "../../../router";
import { may, useSession } from "../../../session";
import { FileEditor } from "./editor";
import { FolderView } from "./folder";
import { filesHref, locationOf } from "./paths";

/** Links to the folders above; an open file's name ends the trail as plain text. */
function Breadcrumbs({ appId, path, isFile }: { appId: string; path: string; isFile: boolean }) {
  const segments = path.split("/").filter(Boolean);
  return (
    <nav class="files-crumbs" aria-label="Folder path">
      <a href={filesHref(appId, "folder", "")}>Files</a>
      {segments.map((name, index) => (
        <>
          <span aria-hidden="true"> / </span>
          {isFile && index === segments.length - 1 ? (
            <span aria-current="page">{name}</span>
          ) : (
            <a href={filesHref(appId, "folder", segments.slice(0, index + 1).join("/"))}>{name}</a>
          )}
        </>
      ))}
    </nav>
  );
}

function Redeploy({ appId }: { appId: string }) {
  const [error, setError] = useState("");
  const [buildId, setBuildId] = useState("");
  const redeploy = async () => {
    setBuildId("");
    const answer = await api<{ buildId: string }>("POST", `/api/apps/${segment(appId)}/redeploy?source=files`);
    setBuildId(answer.buildId);
  };
  return (
    <div class="files-redeploy">
      <ActionButton class="primary" run={redeploy} onError={setError}>
        Redeploy with these files
      </ActionButton>
      {buildId && (
        <p role="status">
          Build <a href={href("apps", appId, "builds", buildId)}><code>{buildId}</code></a> started.
        </p>
      )}
      <ErrorText message={error} />
    </div>
  );
}

export function FilesTab({ appId, rest }: { appId: string; rest: string[] }) {
  const { session } = useSession();
  const location = locationOf(rest);
  const canOpen = may(session, "GET /api/apps/{appId}/fs/file");
  return (
    <section class="files">
      <div class="files-head">
        <h2>Files</h2>
        <div class="files-actions">
          {may(session, "GET /api/apps/{appId}/fs/archive") && (
            <a class="button-link" href={`/api/apps/${segment(appId)}/fs/archive`} download>
              Download as ZIP
            </a>
          )}
          {may(session, "POST /api/apps/{appId}/redeploy") && <Redeploy appId={appId} />}
        </div>
      </div>
      {!canOpen && <ReadOnlyNote role={session.role}>can list the app's files, not open or change them (a source tree may hold secrets).</ReadOnlyNote>}
      <Breadcrumbs appId={appId} path={location.path} isFile={location.kind === "file"} />
      {location.kind === "file" ? <FileEditor key={location.path} appId={appId} path={location.path} /> : <FolderView key={location.path} appId={appId} folder={location.path} />}
    </section>
  );
}

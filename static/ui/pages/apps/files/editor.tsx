// One text file open for editing: Save writes over the version it was opened at (a change made
// elsewhere meanwhile is refused, not overwritten), and leaving with unsaved changes asks first.
import { useEffect, useState } from "preact/hooks";
import { api, segment } from "../../../api";
import { ActionButton } from "../../../components/form";
import { ErrorText, When } from "../../../components/text";
import { Spinner } from "../../../components/widgets";
import { useLoad } from "../../../session";
import { filesHref, formatSize, parentOf } from "./paths";

interface FileContent {
  path: string;
  size: number;
  modifiedAt: string;
  version: string;
  binary: boolean;
  content: string | null;
}

const LEAVE_QUESTION = "This file has unsaved changes. Leave without saving?";

export function FileEditor({ appId, path }: { appId: string; path: string }) {
  const base = `/api/apps/${segment(appId)}/fs`;
  const loaded = useLoad(() => api<{ file: FileContent }>("GET", `${base}/file?path=${encodeURIComponent(path)}`).then((answer) => answer.file), [appId, path]);
  const [text, setText] = useState<string | null>(null);
  const [version, setVersion] = useState("");
  const [error, setError] = useState("");
  const [savedText, setSavedText] = useState<string | null>(null);
  const [justSaved, setJustSaved] = useState(false);
  const file = loaded.data;
  useEffect(() => {
    if (!file) return;
    setText(file.content);
    setSavedText(file.content);
    setVersion(file.version);
  }, [file]);
  const unsaved = text !== savedText;

  useEffect(() => {
    if (!unsaved) return;
    const warn = (event: BeforeUnloadEvent) => event.preventDefault();
    // Every in-page link changes the hash; asking before the click lands keeps the editor (and its
    // text) in place when the person stays.
    const askBeforeLeaving = (event: MouseEvent) => {
      const link = (event.target as Element | null)?.closest?.("a[href^='#']");
      if (link && !confirm(LEAVE_QUESTION)) event.preventDefault();
    };
    window.addEventListener("beforeunload", warn);
    document.addEventListener("click", askBeforeLeaving, true);
    return () => {
      window.removeEventListener("beforeunload", warn);
      document.removeEventListener("click", askBeforeLeaving, true);
    };
  }, [unsaved]);

  if (loaded.error) return <ErrorText message={loaded.error} />;
  if (!file || (text === null && !file.binary)) return <Spinner label="Opening the file…" />;

  const save = async () => {
    const answer = await api<{ file: { version: string } }>("PUT", `${base}/file`, { path, content: text, ifMatch: version });
    setVersion(answer.file.version);
    setSavedText(text);
    setJustSaved(true);
  };
  return (
    <div class="files-editor">
      <h3>{path}</h3>
      <p class="muted">
        {formatSize(file.size)}, changed <When iso={file.modifiedAt} />. <a href={filesHref(appId, "folder", parentOf(path))}>Back to the folder</a>
      </p>
      {file.binary ? (
        <p>This file is not text, so it cannot be edited here.</p>
      ) : (
        <>
          <label class="field">
            <span class="field-label">Content</span>
            <textarea
              class="files-text"
              aria-label={`Content of ${path}`}
              spellcheck={false}
              value={text ?? ""}
              onInput={(event) => {
                setText(event.currentTarget.value);
                setJustSaved(false);
              }}
            />
          </label>
          <div class="form-actions">
            <ActionButton class="primary" run={save} onError={setError}>
              Save
            </ActionButton>
            <span role="status" class="muted">
              {unsaved ? "Unsaved changes" : justSaved ? "Saved" : ""}
            </span>
          </div>
          <ErrorText message={error} />
        </>
      )}
    </div>
  );
}

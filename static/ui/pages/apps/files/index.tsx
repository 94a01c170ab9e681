// An app's files: the file manager of its kept source tree.
export function FilesTab({ appId }: { appId: string; rest: string[] }) {
  return <h2>Files of {appId}</h2>;
}

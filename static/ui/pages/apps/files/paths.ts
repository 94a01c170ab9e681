// Where the file manager is: `#/apps/<id>/files/folder/<segments>` shows a folder,
// `#/apps/<id>/files/file/<segments>` opens a file; no segments is the root folder.
import { href } from "../../../router";

export interface FilesLocation {
  kind: "folder" | "file";
  path: string;
}

export function locationOf(rest: string[]): FilesLocation {
  const [kind, ...segments] = rest;
  return { kind: kind === "file" && segments.length ? "file" : "folder", path: segments.join("/") };
}

export const filesHref = (appId: string, kind: "folder" | "file", path: string) =>
  href("apps", appId, "files", kind, ...path.split("/").filter(Boolean));

export const parentOf = (path: string) => path.split("/").slice(0, -1).join("/");

export const joinPath = (folder: string, name: string) => (folder ? `${folder}/${name}` : name);

export function formatSize(bytes: number) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

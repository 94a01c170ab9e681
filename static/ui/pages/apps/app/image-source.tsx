// What the app page shows of an app deployed from a prebuilt image: the reference each deploy pulls
// (with the user it runs as), and per build the digest that pull got, shortened.
import type { App, Build } from "./types";

export const isImageApp = (app: App) => app.runtime === "image";

/** The image reference and who the container runs as. */
export function ImageSource({ app }: { app: App }) {
  return (
    <>
      <code class="image-reference">{app.image}</code>
      <span class="muted">{app.user ? ` runs as ${app.user}` : " runs as the image's own user"}</span>
    </>
  );
}

/** `sha256:` and the first 12 hex digits of the build's pulled digest, the whole reference on hover. */
export function BuildDigest({ build }: { build: Build }) {
  if (!build.imageDigest) return <>—</>;
  const digest = build.imageDigest.slice(build.imageDigest.indexOf("@") + 1);
  return (
    <code title={build.imageDigest}>
      {digest.slice(0, "sha256:".length + 12)}
    </code>
  );
}

// Deploying an app, from a ZIP (`#/apps/new`), a repository (`#/apps/new/repository`) or a prebuilt
// image (`#/apps/new/image`); once the API accepted it, the build log and the app's status until it runs or fails.
import { useEffect, useState } from "preact/hooks";
import "./apps.css";
import { Tabs } from "../../components/widgets";
import { ReadOnlyNote } from "../../components/text";
import { href, useRoute } from "../../router";
import { may, useSession } from "../../session";
import { ImageDeployForm } from "./deploy/image-form";
import { DeployProgress, type StartedDeploy } from "./deploy/progress";
import { RepositoryDeployForm } from "./deploy/repository-form";
import { ZipDeployForm } from "./deploy/zip-form";

const SOURCES = [
  { id: "zip", title: "From a ZIP", href: href("apps", "new") },
  { id: "repository", title: "From a repository", href: href("apps", "new", "repository") },
  { id: "image", title: "From an image", href: href("apps", "new", "image") },
];
const FORMS = { zip: ZipDeployForm, repository: RepositoryDeployForm, image: ImageDeployForm };

export function DeployPage() {
  const { session } = useSession();
  const route = useRoute();
  const source = route[2] === "repository" || route[2] === "image" ? route[2] : "zip";
  const SourceForm = FORMS[source];
  const [started, setStarted] = useState<StartedDeploy | null>(null);
  // A link to the other way of deploying opens its form, even from a deploy's progress.
  useEffect(() => setStarted(null), [source]);

  return (
    <>
      <p class="deploy-back">
        <a href="#/apps">← Apps</a>
      </p>
      <h1>Deploy an app</h1>
      {!may(session, "POST /api/apps/deploy") && !may(session, "POST /api/apps/deploy-from-repo") && !may(session, "POST /api/apps/deploy-image") ? (
        <ReadOnlyNote role={session.role}>can read the workspace's apps, not deploy them.</ReadOnlyNote>
      ) : started ? (
        <DeployProgress key={started.buildId} started={started} onDeployAnother={() => setStarted(null)} />
      ) : (
        <>
          <Tabs label="Deploy from" tabs={SOURCES} current={source} />
          <section class="panel" aria-label={SOURCES.find((candidate) => candidate.id === source)!.title} key={source}>
            <SourceForm onStarted={setStarted} />
          </section>
        </>
      )}
    </>
  );
}

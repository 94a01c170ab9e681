// A deploy from a prebuilt image (POST /api/apps/deploy-image, JSON): the image reference, the
// app's fields, the user it runs as and the environment variables it starts with. The pull uses the
// workspace's credentials for the image's registry on its own (Settings > Registries).
import { api } from "../../../api";
import { Field, Form, type FormValues } from "../../../components/form";
import { AppFields, appFieldValues } from "./app-fields";
import { EnvTextField, envTextVariables } from "./env-text";
import type { StartedDeploy } from "./progress";

/** Refusals about the image itself, shown beside its field. */
const FIELD_OF_CODE = { IMAGE_NOT_ALLOWED: "image", NAME_TAKEN: "name", SUBDOMAIN_TAKEN: "subdomain" };

export function ImageDeployForm({ onStarted }: { onStarted: (started: StartedDeploy) => void }) {
  const deploy = async (values: FormValues) => {
    const envVars = envTextVariables(values.envText);
    const body = {
      ...appFieldValues(values),
      image: values.image!.trim(),
      ...(values.user?.trim() ? { user: values.user.trim() } : {}),
      ...(Object.keys(envVars).length ? { envVars } : {}),
    };
    onStarted(await api<StartedDeploy>("POST", "/api/apps/deploy-image", body));
  };
  return (
    <Form class="deploy-form" label="Deploy from an image" submitText="Deploy" onSubmit={deploy} fieldOfCode={FIELD_OF_CODE}>
      <Field
        label="Image"
        name="image"
        required
        maxLength={512}
        autocomplete="off"
        spellcheck={false}
        placeholder="ghcr.io/owner/app:1.4"
        hint={
          <>
            A tag or a digest (<code>name@sha256:…</code>); without one, <code>latest</code>.
          </>
        }
      />
      <p class="muted deploy-registry-note">
        From a private registry, the pull uses this workspace's credentials for the image's host on its own, if it has some: add them in{" "}
        <a href="#/settings/registries">Settings › Registries</a>.
      </p>
      <AppFields fromImage />
      <div class="deploy-fields">
        <Field label="User (optional)" name="user" autocomplete="off" spellcheck={false} placeholder="The image's own" hint="uid, uid:gid or a name the image knows." />
      </div>
      <EnvTextField hint="KEY=VALUE lines, as in a .env file: the container starts with them. Stored encrypted; the Environment tab edits them later." />
    </Form>
  );
}

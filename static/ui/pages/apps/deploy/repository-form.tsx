// A deploy from a git repository (POST /api/apps/deploy-from-repo, JSON): the app's fields, the
// repository, branch and folder, whether pushes deploy it, a token for a private one, and the
// environment variables it starts with.
import { api } from "../../../api";
import { Field, Form, type FormValues } from "../../../components/form";
import { AppFields, appFieldValues } from "./app-fields";
import { EnvTextField, envTextVariables } from "./env-text";
import type { StartedDeploy } from "./progress";

export function RepositoryDeployForm({ onStarted }: { onStarted: (started: StartedDeploy) => void }) {
  const deploy = async (values: FormValues) => {
    const envVars = envTextVariables(values.envText);
    const body = {
      ...appFieldValues(values),
      repository: {
        id: values.repositoryId!.trim(),
        owner: values.repositoryOwner!.trim(),
        name: values.repositoryName!.trim(),
        branch: values.branch!.trim(),
        ...(values.path?.trim() ? { path: values.path.trim() } : {}),
      },
      autoDeploy: values.autoDeploy === "on",
      ...(values.accessToken ? { accessToken: values.accessToken } : {}),
      ...(Object.keys(envVars).length ? { envVars } : {}),
    };
    onStarted(await api<StartedDeploy>("POST", "/api/apps/deploy-from-repo", body));
  };
  return (
    <Form class="deploy-form" label="Deploy from a repository" submitText="Deploy" onSubmit={deploy}>
      <AppFields />
      <div class="deploy-fields">
        <Field label="Repository owner" name="repositoryOwner" required autocomplete="off" spellcheck={false} placeholder="acme" />
        <Field label="Repository name" name="repositoryName" required autocomplete="off" spellcheck={false} placeholder="website" />
        <Field label="Branch" name="branch" required autocomplete="off" spellcheck={false} defaultValue="main" />
        <Field label="Folder (optional)" name="path" autocomplete="off" spellcheck={false} placeholder="apps/web" hint="The app's root inside the repository." />
        <Field
          label="Repository id"
          name="repositoryId"
          required
          autocomplete="off"
          spellcheck={false}
          placeholder="123456789"
          hint="GitHub's number for the repository (api.github.com/repos/owner/name shows it): pushes are matched on it."
        />
        <Field label="Access token (optional)" name="accessToken" type="password" autocomplete="off" hint="For a private repository: stored encrypted, never shown again." />
      </div>
      <EnvTextField hint="KEY=VALUE lines, as in a .env file: the app starts with them. Stored encrypted; the Environment tab edits them later." />
      <label class="deploy-check">
        <input type="checkbox" name="autoDeploy" />
        <span>Deploy again on every push to the branch</span>
      </label>
    </Form>
  );
}

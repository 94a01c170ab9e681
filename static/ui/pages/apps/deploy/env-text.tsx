// Environment variables given at deploy time as `.env` text, so an app that needs one to start (a
// DATABASE_URL, say) runs from its first deploy, from a ZIP or a repository alike.
import { parseDotEnv } from "../app/env-file";

export function EnvTextField({ hint }: { hint: string }) {
  return (
    <label class="field deploy-env-text">
      <span class="field-label">Environment variables (optional)</span>
      <textarea name="envText" class="env-paste" rows={4} spellcheck={false} placeholder={"DATABASE_URL=postgres://…\nexport API_KEY=\"…\""} />
      <small>{hint}</small>
    </label>
  );
}

/** The variables of the field's text; a line that is not KEY=VALUE is refused (nothing typed is dropped silently). */
export function envTextVariables(text: string | undefined): Record<string, string> {
  const { envVars, skipped } = parseDotEnv(text ?? "");
  if (skipped.length) {
    const lines = skipped.map(({ line, text: content }) => `line ${line} (${content})`).join(", ");
    throw new Error(`Environment variables: ${lines} is not KEY=VALUE.`);
  }
  return envVars;
}

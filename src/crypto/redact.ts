// Masks secrets in text shown to people (build logs, engine output, error messages).

/** Shorter values would mask ordinary words; a secret that holds another is masked whole first. */
const MIN_SECRET_LENGTH = 4;

export function redact(text: string, secrets: Iterable<string>): string {
  const masked = [...secrets].filter((secret) => secret.length >= MIN_SECRET_LENGTH).sort((a, b) => b.length - a.length);
  let result = text;
  for (const secret of masked) result = result.replaceAll(secret, "****");
  return result;
}

// Time-based one-time passwords (RFC 6238 over RFC 4226's HOTP): HMAC-SHA-1, 30-second steps,
// 6 digits, as every authenticator app reads an `otpauth://totp/` URI. Pure functions; the secret
// is kept as base32 text (RFC 4648, no padding), the form the apps are given.

export const STEP_SECONDS = 30;
export const DIGITS = 6;
/** Codes of the step before and after the current one are accepted too (clock drift). */
const DRIFT_STEPS = 1;

const BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

export function base32Encode(bytes: Uint8Array): string {
  let out = "";
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

export function base32Decode(text: string): Uint8Array {
  const bytes: number[] = [];
  let bits = 0;
  let value = 0;
  for (const character of text.toUpperCase().replace(/=+$/, "")) {
    const index = BASE32.indexOf(character);
    if (index < 0) throw new Error("not base32");
    value = ((value << 5) | index) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      bytes.push((value >>> (bits - 8)) & 255);
      bits -= 8;
    }
  }
  return new Uint8Array(bytes);
}

/** A new secret: 20 random bytes (160 bits, RFC 4226's recommended length), as base32. */
export function newTotpSecret(): string {
  return base32Encode(crypto.getRandomValues(new Uint8Array(20)));
}

/** The time step a moment falls in. */
export const stepAt = (timeMs: number) => Math.floor(timeMs / 1000 / STEP_SECONDS);

/** HOTP of one counter value (RFC 4226 section 5.3), `digits` long with leading zeros. */
export function hotp(secret: Uint8Array, counter: number, digits = DIGITS): string {
  const message = new Uint8Array(8);
  new DataView(message.buffer).setBigUint64(0, BigInt(counter));
  const mac = new Bun.CryptoHasher("sha1", secret).update(message).digest();
  const offset = mac[mac.length - 1]! & 0x0f;
  const binary = ((mac[offset]! & 0x7f) << 24) | (mac[offset + 1]! << 16) | (mac[offset + 2]! << 8) | mac[offset + 3]!;
  return String(binary % 10 ** digits).padStart(digits, "0");
}

/** The TOTP code of a moment. */
export const totpAt = (secret: Uint8Array, timeMs: number, digits = DIGITS) => hotp(secret, stepAt(timeMs), digits);

/**
 * The step whose code `code` is, within the drift window around `timeMs` and after `lastUsedStep`
 * (a code once accepted is never accepted again, nor one older than it); null when none is.
 */
export function matchingStep(secretBase32: string, code: string, timeMs: number, lastUsedStep: number | null): number | null {
  if (!/^\d{6}$/.test(code)) return null;
  const secret = base32Decode(secretBase32);
  const now = stepAt(timeMs);
  for (let step = now - DRIFT_STEPS; step <= now + DRIFT_STEPS; step++) {
    if (lastUsedStep !== null && step <= lastUsedStep) continue;
    if (constantTimeEqual(hotp(secret, step), code)) return step;
  }
  return null;
}

function constantTimeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let index = 0; index < a.length; index++) difference |= a.charCodeAt(index) ^ b.charCodeAt(index);
  return difference === 0;
}

/** The `otpauth://` URI an authenticator app reads (Google's Key Uri Format). */
export function otpauthUri(issuer: string, accountName: string, secretBase32: string): string {
  const label = `${encodeURIComponent(issuer)}:${encodeURIComponent(accountName)}`;
  const query = new URLSearchParams({ secret: secretBase32, issuer, algorithm: "SHA1", digits: String(DIGITS), period: String(STEP_SECONDS) });
  return `otpauth://totp/${label}?${query}`;
}

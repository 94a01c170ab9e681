// Proof that a workspace controls a domain: a TXT record `_platform-challenge.<domain>` whose value
// is the workspace's verification token, found by the platform's resolver (PLATFORM_DNS_SERVERS).
// One token per workspace, made on first need, so one record per name proves it for every app of
// the workspace; the token is public once published, and proves nothing for another workspace.
import { eq } from "drizzle-orm";
import type { PlatformDb } from "../../db";
import { domainVerificationTokens } from "../../db/schema";
import { randomBase62 } from "../../crypto/tokens";

/** The label the TXT record is published under, before the domain. */
export const CHALLENGE_LABEL = "_platform-challenge";
const TOKEN_PREFIX = "platform-verification=";

export function challengeRecordName(domain: string): string {
  return `${CHALLENGE_LABEL}.${domain}`;
}

/** The workspace's record value, made (and kept) the first time it is asked for. */
export function verificationToken(db: PlatformDb, workspaceId: string): string {
  const found = db.select({ token: domainVerificationTokens.token }).from(domainVerificationTokens).where(eq(domainVerificationTokens.workspaceId, workspaceId)).get();
  if (found) return found.token;
  const token = `${TOKEN_PREFIX}${randomBase62(32)}`;
  db.insert(domainVerificationTokens).values({ workspaceId, token, createdAt: Date.now() }).onConflictDoNothing().run();
  return db.select({ token: domainVerificationTokens.token }).from(domainVerificationTokens).where(eq(domainVerificationTokens.workspaceId, workspaceId)).get()!.token;
}

/** What a lookup of the record found, for a person: null when it proves the claim. */
export function challengeProblem(domain: string, records: string[] | null, token: string): string | null {
  const name = challengeRecordName(domain);
  if (records === null) return `The TXT record ${name} could not be looked up (no answer in time): the platform tries again.`;
  if (records.some((record) => record.trim() === token)) return null;
  if (records.length === 0) return `No TXT record at ${name} yet: create it with the value shown (DNS changes may take a while to be seen).`;
  return `The TXT record at ${name} does not hold this workspace's value (found ${records.length} other value${records.length === 1 ? "" : "s"}): set it to the value shown.`;
}

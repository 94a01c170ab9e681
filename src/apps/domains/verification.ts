// Proof that a workspace controls a domain: a TXT record `_platform-challenge.<domain>` whose value
// is the workspace's verification token, found by the platform's resolver (PLATFORM_DNS_SERVERS).
// One token per workspace, made with its first claim, so one record per name proves it for every
// app of the workspace; the token is public once published, and proves nothing for another
// workspace. The record is also how a holder keeps a name: see ./service.ts.
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

/** The workspace's record value, made (and kept) with its first claim. */
export function issueVerificationToken(db: PlatformDb, workspaceId: string): void {
  db.insert(domainVerificationTokens).values({ workspaceId, token: `${TOKEN_PREFIX}${randomBase62(32)}`, createdAt: Date.now() }).onConflictDoNothing().run();
}

/** The workspace's record value; null for a workspace that never claimed a domain. Reads only. */
export function verificationTokenOf(db: PlatformDb, workspaceId: string): string | null {
  return db.select({ token: domainVerificationTokens.token }).from(domainVerificationTokens).where(eq(domainVerificationTokens.workspaceId, workspaceId)).get()?.token ?? null;
}

/** Whether the TXT values found hold `token`. */
export function holdsToken(records: string[], token: string | null): boolean {
  return token !== null && records.some((record) => record.trim() === token);
}

/** What a lookup of the record found, for a person: null when it proves the claim. */
export function challengeProblem(domain: string, records: string[] | null, token: string): string | null {
  const name = challengeRecordName(domain);
  if (records === null) return `The TXT record ${name} could not be looked up (no answer in time): the platform tries again.`;
  if (holdsToken(records, token)) return null;
  if (records.length === 0) return `No TXT record at ${name} yet: create it with the value shown (DNS changes may take a while to be seen).`;
  return `The TXT record at ${name} does not hold this workspace's value (found ${records.length} other value${records.length === 1 ? "" : "s"}): set it to the value shown.`;
}

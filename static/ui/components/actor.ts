// Who did something, as the API records it (`actor: {type, id}`), in words: a member by email
// (from GET /api/organization/members), else the kind of key.
import { api } from "../api";

export interface Actor {
  type: string;
  id: string | null;
}

/** The workspace's members by user id, for actorText. */
export async function memberEmails(): Promise<Map<string, string>> {
  const { members } = await api<{ members: { userId: string; email: string }[] }>("GET", "/api/organization/members");
  return new Map(members.map((member) => [member.userId, member.email]));
}

export function actorText(actor: Actor, emailOf: Map<string, string> | undefined): string {
  if (actor.type === "user") return (actor.id && emailOf?.get(actor.id)) ?? `user ${actor.id}`;
  if (actor.type === "api_key") return `API key ${actor.id}`;
  if (actor.type === "cli") return "command line";
  return actor.type;
}

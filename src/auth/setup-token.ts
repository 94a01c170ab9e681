// The one-time owner-setup token: made fresh at every start and kept only in memory, printed on
// the server's output (like Jupyter's), so only whoever can read that output (the operator) may
// create the owner account from another machine. Requests from the machine itself need none.
import { timingSafeEqual } from "node:crypto";
import { randomBase62, sha256Hex } from "../crypto/tokens";
import { inAnyRange, isLoopback, type CidrRange } from "../http/trusted-proxies";
import type { PlatformDb } from "../db";
import { setupKeyRequired, setupRequired } from "./service";

/** Headers a reverse proxy adds: a loopback peer that sends them is relaying someone else. */
const FORWARDING_HEADERS = ["forwarded", "x-forwarded-for", "x-real-ip"];

export class SetupToken {
  readonly value = randomBase62(32);
  private readonly digest = Buffer.from(sha256Hex(this.value), "hex");

  /** Compared in constant time, so the answer's timing says nothing about how much was right. */
  matches(candidate: string | null | undefined): boolean {
    if (!candidate) return false;
    return timingSafeEqual(Buffer.from(sha256Hex(candidate), "hex"), this.digest);
  }
}

/**
 * Whether the setup comes straight from the machine itself: the socket peer is a loopback address
 * and no proxy stands in between. A front proxy on the same machine connects from loopback too,
 * so a trusted proxy, or any loopback peer sending forwarding headers, does not count.
 */
export function setupFromThisMachine(request: Request, peerAddress: string | null, trustedProxies: readonly CidrRange[]): boolean {
  if (!isLoopback(peerAddress) || inAnyRange(trustedProxies, peerAddress)) return false;
  return FORWARDING_HEADERS.every((name) => !request.headers.has(name));
}

/**
 * Whether this setup must send the token. Not once the owner exists (the setup answers 409), not
 * when keys from `platform keys create` are required instead (one of them proves the same: that
 * the caller runs the server), and not from the machine itself.
 */
export function setupTokenRequired(db: PlatformDb, fromThisMachine: boolean): boolean {
  return !fromThisMachine && setupRequired(db) && !setupKeyRequired(db);
}

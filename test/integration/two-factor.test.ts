// Two-factor sign-in (TOTP, RFC 6238) of dashboard accounts: enrolment with a first code and
// recovery codes shown once, the login that asks for the code without saying whether the password
// was right, codes that are taken once, wrong codes counted like wrong passwords, turning it off,
// and the owner's switch that makes members set it up before anything else. API keys unchanged.
// The tests of each describe block build on the ones before them, in order.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { serversStoppedAfterAll, TestServer, type CreatedKey } from "../helpers/server";
import { expectErrorEnvelope, sessionCookieOf } from "../helpers/auth-matrix";
import { base32Decode, totpAt } from "../../src/auth/two-factor/totp";

setDefaultTimeout(30_000);

const OWNER = { email: "owner@example.com", password: "owner-password-1" };
const MEMBER = { email: "member@example.com", password: "member-password-1" };

let server: TestServer;
let ownerKey: CreatedKey;
let ownerCookie: string;
let secret: string;
let recoveryCodes: string[];

/** The code of the step `offset` steps from now, as the authenticator app shows it. */
const codeOf = (base32Secret: string, offset = 0) => totpAt(base32Decode(base32Secret), Date.now() + offset * 30_000);

const asBrowser = (cookie: string, method: string, path: string, body?: unknown) =>
  server.request(method, path, { headers: { cookie, origin: server.baseUrl }, body });
const login = (body: { email: string; password: string; code?: string }) => server.request("POST", "/api/auth/login", { body });

async function invitedMember(key: string, account: { email: string; password: string }, role = "member") {
  const invitation = await server.request("POST", "/api/organization/invitations", { key, body: { email: account.email, role } });
  const accepted = await server.request("POST", `/api/organization/invitations/${invitation.body.invitation.id}/accept`, { body: { password: account.password } });
  expect(accepted.status).toBe(200);
  return sessionCookieOf(accepted);
}

/** Turns two-factor sign-in on for the session's account; its secret and recovery codes. */
async function enrol(cookie: string, password: string): Promise<{ secret: string; recoveryCodes: string[] }> {
  const setup = await asBrowser(cookie, "POST", "/api/auth/two-factor/setup", { password });
  expect(setup.status).toBe(200);
  const enabled = await asBrowser(cookie, "POST", "/api/auth/two-factor/enable", { code: codeOf(setup.body.secret) });
  expect(enabled.status).toBe(200);
  return { secret: setup.body.secret, recoveryCodes: enabled.body.recoveryCodes };
}

beforeAll(async () => {
  // Wrong passwords and codes are part of these tests; their limits are tested on a server of their own below.
  server = await TestServer.start({ PLATFORM_AUTH_FAILURE_BURST: "1000", PLATFORM_AUTH_ACCOUNT_FAILURE_BURST: "1000" });
  expect((await server.request("POST", "/api/auth/setup", { body: OWNER })).status).toBe(201);
  ownerKey = await server.createKey("owner's script");
  ownerCookie = sessionCookieOf(await login(OWNER));
});
afterAll(() => server.stop());

describe("enrolment", () => {
  test("off at first; an owner cannot require it of the workspace before having it", async () => {
    const status = await asBrowser(ownerCookie, "GET", "/api/auth/two-factor");
    expect(status.body.twoFactor).toEqual({ enabled: false, recoveryCodesLeft: 0, requiredBy: [] });
    const required = await asBrowser(ownerCookie, "PUT", "/api/organization/two-factor-requirement", { required: true });
    expectErrorEnvelope(required, 409, "TWO_FACTOR_NOT_ENABLED");
  });

  test("an API key cannot set it up (400 SESSION_REQUIRED)", async () => {
    expectErrorEnvelope(await server.request("POST", "/api/auth/two-factor/setup", { key: ownerKey.key, body: { password: OWNER.password } }), 400, "SESSION_REQUIRED");
  });

  test("setup asks for the account's password: a stolen session alone cannot turn it on (and end the owner's sessions)", async () => {
    expectErrorEnvelope(await asBrowser(ownerCookie, "POST", "/api/auth/two-factor/setup", {}), 400, "VALIDATION_FAILED");
    expectErrorEnvelope(await asBrowser(ownerCookie, "POST", "/api/auth/two-factor/setup", { password: "not-the-password" }), 400, "WRONG_PASSWORD");
    expect((await asBrowser(ownerCookie, "GET", "/api/auth/two-factor")).body.twoFactor.enabled).toBe(false);
  });

  test("setup gives a base32 secret and its otpauth:// URI; nothing changes until a first code confirms it", async () => {
    const setup = await asBrowser(ownerCookie, "POST", "/api/auth/two-factor/setup", { password: OWNER.password });
    expect(setup.status).toBe(200);
    secret = setup.body.secret;
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    const uri = new URL(setup.body.otpauthUri);
    expect([uri.protocol, uri.host, uri.searchParams.get("secret"), uri.searchParams.get("issuer")]).toEqual(["otpauth:", "totp", secret, "Platform"]);
    expect(decodeURIComponent(uri.pathname)).toBe(`/Platform:${OWNER.email}`);
    expect((await login(OWNER)).status).toBe(200);
  });

  test("a code that is not six digits (or, to sign in, a recovery code) is refused as malformed: 400 VALIDATION_FAILED", async () => {
    for (const code of ["1234567", "12345", "abcde-fghij", "1".repeat(64)]) {
      expectErrorEnvelope(await asBrowser(ownerCookie, "POST", "/api/auth/two-factor/enable", { code }), 400, "VALIDATION_FAILED");
    }
    for (const code of ["x".repeat(40), "abcd-efgh", "123456789"]) {
      expectErrorEnvelope(await login({ ...OWNER, code }), 400, "VALIDATION_FAILED");
    }
    expect((await login({ ...OWNER, code: "ABCDE FGHIJ" })).status).toBe(200);
  });

  test("a wrong first code -> 400 INVALID_TWO_FACTOR_CODE; the right one turns it on and answers 10 recovery codes, once", async () => {
    const wrong = String((Number(codeOf(secret)) + 1) % 1_000_000).padStart(6, "0");
    expectErrorEnvelope(await asBrowser(ownerCookie, "POST", "/api/auth/two-factor/enable", { code: wrong }), 400, "INVALID_TWO_FACTOR_CODE");
    const otherSession = sessionCookieOf(await login(OWNER));
    const enabled = await asBrowser(ownerCookie, "POST", "/api/auth/two-factor/enable", { code: codeOf(secret) });
    expect(enabled.status).toBe(200);
    recoveryCodes = enabled.body.recoveryCodes;
    expect(recoveryCodes).toHaveLength(10);
    expect(new Set(recoveryCodes).size).toBe(10);
    for (const code of recoveryCodes) expect(code).toMatch(/^[a-z2-9]{5}-[a-z2-9]{5}$/);
    const status = await asBrowser(ownerCookie, "GET", "/api/auth/two-factor");
    expect(status.body.twoFactor).toMatchObject({ enabled: true, recoveryCodesLeft: 10 });
    expect(JSON.stringify(status.body)).not.toContain(recoveryCodes[0]);
    // Sessions started before elsewhere end; this one goes on.
    expectErrorEnvelope(await server.request("GET", "/api/auth/session", { headers: { cookie: otherSession } }), 401, "UNAUTHORIZED");
    expect((await server.request("GET", "/api/auth/session", { headers: { cookie: ownerCookie } })).body.twoFactorEnabled).toBe(true);
    expectErrorEnvelope(await asBrowser(ownerCookie, "POST", "/api/auth/two-factor/setup", { password: OWNER.password }), 409, "CONFLICT");
  });

  test("the secret is stored encrypted, the recovery codes only as hashes", () => {
    const db = new Database(join(server.dataDir, "platform.sqlite"), { readonly: true });
    const stored = JSON.stringify([db.query("SELECT * FROM two_factor_secrets").all(), db.query("SELECT * FROM two_factor_recovery_codes").all()]);
    db.close();
    expect(stored).toContain("v1.");
    expect(stored).not.toContain(secret);
    for (const code of recoveryCodes) expect(stored).not.toContain(code);
  });
});

describe("login with two-factor sign-in", () => {
  test("without a code: 401 TWO_FACTOR_REQUIRED whether the password is right or not, and no cookie", async () => {
    const right = await login(OWNER);
    const wrong = await login({ ...OWNER, password: "not-the-password" });
    for (const answer of [right, wrong]) {
      expectErrorEnvelope(answer, 401, "TWO_FACTOR_REQUIRED");
      expect(answer.headers.get("set-cookie")).toBeNull();
    }
    expect(wrong.body).toEqual(right.body);
  });

  test("a wrong password with the right code and the right password with a wrong code get the same 401 INVALID_CREDENTIALS", async () => {
    const code = codeOf(secret, 1);
    const wrongPassword = await login({ ...OWNER, password: "not-the-password", code });
    const wrongCode = await login({ ...OWNER, code: String((Number(code) + 1) % 1_000_000).padStart(6, "0") });
    expectErrorEnvelope(wrongPassword, 401, "INVALID_CREDENTIALS");
    expect(wrongCode.body).toEqual(wrongPassword.body);
    // The code was not spent by the wrong password: with the right one it signs in, once.
    const signedIn = await login({ ...OWNER, code });
    expect(signedIn.status).toBe(200);
    expect((await server.request("GET", "/api/auth/session", { headers: { cookie: sessionCookieOf(signedIn) } })).body.user.email).toBe(OWNER.email);
    expectErrorEnvelope(await login({ ...OWNER, code }), 401, "INVALID_CREDENTIALS");
  });

  test("a recovery code signs in instead of the app's code, once, in any case and with or without its dash", async () => {
    const [first, second] = recoveryCodes;
    expect((await login({ ...OWNER, code: first!.toUpperCase().replace("-", " ") })).status).toBe(200);
    expectErrorEnvelope(await login({ ...OWNER, code: first! }), 401, "INVALID_CREDENTIALS");
    expect((await login({ ...OWNER, code: second!.replace("-", "") })).status).toBe(200);
    expect((await asBrowser(ownerCookie, "GET", "/api/auth/two-factor")).body.twoFactor.recoveryCodesLeft).toBe(8);
    const actions = (await server.request("GET", "/api/organization/audit-log", { key: ownerKey.key })).body.events.map((event: { action: string }) => event.action);
    expect(actions).toContain("auth.two_factor_enabled");
    expect(actions.filter((action: string) => action === "auth.recovery_code_used")).toHaveLength(2);
  });

  test("an unknown email keeps today's answer; API keys are unchanged", async () => {
    expectErrorEnvelope(await login({ email: "nobody@example.com", password: "whatever-password", code: "123456" }), 401, "INVALID_CREDENTIALS");
    expect((await server.request("GET", "/api/apps/", { key: ownerKey.key })).status).toBe(200);
  });
});

describe("the workspace's requirement", () => {
  let memberCookie: string;
  let memberKey: string;

  test("once an owner requires it, a member's session without it may only set it up (403 TWO_FACTOR_SETUP_REQUIRED)", async () => {
    memberCookie = await invitedMember(ownerKey.key, MEMBER);
    memberKey = (await asBrowser(memberCookie, "POST", "/api/api-keys/", { name: "member's script" })).body.key;
    const required = await asBrowser(ownerCookie, "PUT", "/api/organization/two-factor-requirement", { required: true });
    expect(required.body).toMatchObject({ twoFactorRequired: true, organizationId: ownerKey.workspaceId });
    expectErrorEnvelope(await server.request("GET", "/api/apps/", { headers: { cookie: memberCookie } }), 403, "TWO_FACTOR_SETUP_REQUIRED");
    const session = await server.request("GET", "/api/auth/session", { headers: { cookie: memberCookie } });
    expect(session.body).toMatchObject({ twoFactorRequired: true, twoFactorEnabled: false });
    // A key is not a sign-in: it goes on working.
    expect((await server.request("GET", "/api/apps/", { key: memberKey })).status).toBe(200);
    expect((await server.request("GET", "/api/apps/", { headers: { cookie: ownerCookie } })).status).toBe(200);
  });

  test("after setting it up, the member's session works again", async () => {
    await enrol(memberCookie, MEMBER.password);
    expect((await server.request("GET", "/api/apps/", { headers: { cookie: memberCookie } })).status).toBe(200);
  });

  test("turning it off needs a current code or the password; then the member is asked to set it up again", async () => {
    expectErrorEnvelope(await asBrowser(memberCookie, "POST", "/api/auth/two-factor/disable", {}), 400, "VALIDATION_FAILED");
    expectErrorEnvelope(await asBrowser(memberCookie, "POST", "/api/auth/two-factor/disable", { password: "not-the-password" }), 400, "WRONG_PASSWORD");
    expectErrorEnvelope(await asBrowser(memberCookie, "POST", "/api/auth/two-factor/disable", { code: "000000" }), 400, "INVALID_TWO_FACTOR_CODE");
    const off = await asBrowser(memberCookie, "POST", "/api/auth/two-factor/disable", { password: MEMBER.password });
    expect(off.body.twoFactor).toMatchObject({ enabled: false, recoveryCodesLeft: 0 });
    expectErrorEnvelope(await server.request("GET", "/api/apps/", { headers: { cookie: memberCookie } }), 403, "TWO_FACTOR_SETUP_REQUIRED");
    expect((await login(MEMBER)).status).toBe(200);
    expect((await asBrowser(ownerCookie, "PUT", "/api/organization/two-factor-requirement", { required: false })).status).toBe(200);
    expect((await server.request("GET", "/api/apps/", { headers: { cookie: memberCookie } })).status).toBe(200);
  });
});

describe("other sign-ins of an account with two-factor sign-in", () => {
  test("accepting an invitation with its password asks for the code the same way", async () => {
    const other = await server.createKey("other workspace", "other");
    const invitation = await server.request("POST", "/api/organization/invitations", { key: other.key, body: { email: OWNER.email, role: "admin" } });
    const accept = (body: object) => server.request("POST", `/api/organization/invitations/${invitation.body.invitation.id}/accept`, { body });
    const right = await accept({ password: OWNER.password });
    const wrong = await accept({ password: "not-the-password" });
    expectErrorEnvelope(right, 401, "TWO_FACTOR_REQUIRED");
    expect(wrong.body).toEqual(right.body);
    expectErrorEnvelope(await accept({ password: OWNER.password, code: "000000" }), 401, "INVALID_CREDENTIALS");
    // The app's codes of this minute were spent above: a recovery code does as well.
    const accepted = await accept({ password: OWNER.password, code: recoveryCodes[2]! });
    expect([accepted.status, accepted.body.organizationId]).toEqual([200, other.workspaceId]);
  });
});

describe("on servers of their own", () => {
  const start = serversStoppedAfterAll();

  /** A server whose owner has two-factor sign-in on; its secret and the step its enrolment spent. */
  async function ownerWithTwoFactor(env: Record<string, string> = {}) {
    const own = await start(env);
    expect((await own.request("POST", "/api/auth/setup", { body: OWNER })).status).toBe(201);
    const cookie = sessionCookieOf(await own.request("POST", "/api/auth/login", { body: OWNER }));
    const browser = { cookie, origin: own.baseUrl };
    const setup = await own.request("POST", "/api/auth/two-factor/setup", { headers: browser, body: { password: OWNER.password } });
    const enabled = await own.request("POST", "/api/auth/two-factor/enable", { headers: browser, body: { code: codeOf(setup.body.secret) } });
    expect(enabled.status).toBe(200);
    return { own, ownSecret: setup.body.secret as string };
  }

  test("the same code sent twice at once signs in once", async () => {
    const { own, ownSecret } = await ownerWithTwoFactor({ PLATFORM_AUTH_FAILURE_BURST: "1000" });
    const code = codeOf(ownSecret, 1);
    const answers = await Promise.all([1, 2, 3].map(() => own.request("POST", "/api/auth/login", { body: { ...OWNER, code } })));
    expect(answers.map((answer) => answer.status).toSorted()).toEqual([200, 401, 401]);
  });

  test("wrong codes count against the account's failed-attempt limit, as wrong passwords do", async () => {
    const { own: limited, ownSecret } = await ownerWithTwoFactor({ PLATFORM_AUTH_ACCOUNT_FAILURE_BURST: "3", PLATFORM_AUTH_ACCOUNT_FAILURE_PER_MINUTE: "1" });
    for (const code of ["000000", "111111", "222222"]) {
      expectErrorEnvelope(await limited.request("POST", "/api/auth/login", { body: { ...OWNER, code } }), 401, "INVALID_CREDENTIALS");
    }
    const locked = await limited.request("POST", "/api/auth/login", { body: { ...OWNER, code: codeOf(ownSecret, 1) } });
    expectErrorEnvelope(locked, 429, "RATE_LIMITED");
  });

  test("wrong passwords given to the two-factor setup count against the account's failed-attempt limit", async () => {
    const limited = await start({ PLATFORM_AUTH_ACCOUNT_FAILURE_BURST: "3", PLATFORM_AUTH_ACCOUNT_FAILURE_PER_MINUTE: "1" });
    expect((await limited.request("POST", "/api/auth/setup", { body: OWNER })).status).toBe(201);
    const browser = { cookie: sessionCookieOf(await limited.request("POST", "/api/auth/login", { body: OWNER })), origin: limited.baseUrl };
    for (const password of ["guess-one", "guess-two", "guess-three"]) {
      expectErrorEnvelope(await limited.request("POST", "/api/auth/two-factor/setup", { headers: browser, body: { password } }), 400, "WRONG_PASSWORD");
    }
    expectErrorEnvelope(await limited.request("POST", "/api/auth/two-factor/setup", { headers: browser, body: { password: OWNER.password } }), 429, "RATE_LIMITED");
    expectErrorEnvelope(await limited.request("POST", "/api/auth/login", { body: OWNER }), 429, "RATE_LIMITED");
  });

  test("wrong codes sent through invitations count against the account's limit too, however many invitations are made", async () => {
    // Whoever has the victim's password invites the victim's email from a workspace of their own,
    // again and again: each invitation must not be a fresh allowance of guesses at the code.
    const { own: limited, ownSecret } = await ownerWithTwoFactor({ PLATFORM_AUTH_ACCOUNT_FAILURE_BURST: "3", PLATFORM_AUTH_ACCOUNT_FAILURE_PER_MINUTE: "1" });
    const attacker = await limited.createKey("attacker", "attacker");
    const acceptNewInvitation = async (code: string) => {
      const invitation = await limited.request("POST", "/api/organization/invitations", { key: attacker.key, body: { email: OWNER.email } });
      const id = invitation.body.invitation.id;
      const answer = await limited.request("POST", `/api/organization/invitations/${id}/accept`, { body: { password: OWNER.password, code } });
      await limited.request("DELETE", `/api/organization/invitations/${id}`, { key: attacker.key });
      return answer;
    };
    for (const code of ["000000", "111111", "222222"]) expectErrorEnvelope(await acceptNewInvitation(code), 401, "INVALID_CREDENTIALS");
    expectErrorEnvelope(await acceptNewInvitation(codeOf(ownSecret, 1)), 429, "RATE_LIMITED");
    expectErrorEnvelope(await limited.request("POST", "/api/auth/login", { body: { ...OWNER, code: codeOf(ownSecret, 1) } }), 429, "RATE_LIMITED");
  });
});

// Settings > Account: the person's own two-factor sign-in (TOTP): turn it on (with the password,
// then the secret and its otpauth:// URI shown as text, confirmed by a first code, then the recovery codes, shown once) or
// off (a current code or the password). Also the page a workspace that requires it shows first.
import { useState } from "preact/hooks";
import { api } from "../../api";
import { Field, Form } from "../../components/form";
import { CopyButton, ErrorText } from "../../components/text";
import { useLoad, useSession } from "../../session";

interface TwoFactorStatus {
  enabled: boolean;
  recoveryCodesLeft: number;
  requiredBy: string[];
}

/** The recovery codes of a new enrolment: the only time they are shown. */
function RecoveryCodes({ codes, onDone }: { codes: string[]; onDone: () => void }) {
  return (
    <div class="callout" role="status">
      <p>
        <strong>Two-factor sign-in is on. </strong>Keep these recovery codes somewhere safe: each signs in once instead of a code,
        if the authenticator is lost. They won't be shown again.
      </p>
      <pre data-testid="recovery-codes">{codes.join("\n")}</pre>
      <CopyButton text={codes.join("\n")} label="recovery codes" />{" "}
      <button type="button" class="quiet" onClick={onDone}>
        Done
      </button>
    </div>
  );
}

/** Turning it on: ask for a secret, show it, confirm with a first code; `onEnabled` gets the recovery codes. */
export function TwoFactorSetup({ onEnabled }: { onEnabled: (recoveryCodes: string[]) => Promise<void> | void }) {
  const [enrolment, setEnrolment] = useState<{ secret: string; otpauthUri: string } | null>(null);
  if (!enrolment) {
    return (
      <Form
        label="Turn on two-factor sign-in"
        submitText="Set up two-factor sign-in"
        onSubmit={async ({ password }) => setEnrolment(await api("POST", "/api/auth/two-factor/setup", { password }))}
      >
        <p class="muted">Sign-ins will ask for a code from an authenticator app (any TOTP app) besides the password.</p>
        <Field label="Your password" name="password" type="password" required autocomplete="current-password" maxLength={256} />
      </Form>
    );
  }
  return (
    <Form
      label="Confirm two-factor sign-in"
      submitText="Turn on"
      onSubmit={async ({ code }) => {
        const { recoveryCodes } = await api<{ recoveryCodes: string[] }>("POST", "/api/auth/two-factor/enable", { code: code!.trim() });
        await onEnabled(recoveryCodes);
      }}
    >
      <p>Add this key to your authenticator app (time-based, 6 digits, 30 seconds), or give it the URI:</p>
      <dl class="platform-facts">
        <dt>Key</dt>
        <dd class="secret">
          <code data-testid="totp-secret">{enrolment.secret}</code>
          <CopyButton text={enrolment.secret} label="key" />
        </dd>
        <dt>URI</dt>
        <dd class="secret">
          <code data-testid="totp-uri">{enrolment.otpauthUri}</code>
          <CopyButton text={enrolment.otpauthUri} label="URI" />
        </dd>
      </dl>
      <Field label="Code from the app" name="code" required inputMode="numeric" autocomplete="one-time-code" pattern="[0-9 ]{6,7}" maxLength={7} />
    </Form>
  );
}

export function AccountTab() {
  const { reload } = useSession();
  const status = useLoad(() => api<{ twoFactor: TwoFactorStatus }>("GET", "/api/auth/two-factor").then(({ twoFactor }) => twoFactor));
  const [recoveryCodes, setRecoveryCodes] = useState<string[] | null>(null);
  const changed = async () => {
    await status.reload();
    await reload();
  };

  return (
    <>
      <h2>Two-factor sign-in</h2>
      <ErrorText message={status.error} />
      {recoveryCodes && <RecoveryCodes codes={recoveryCodes} onDone={() => setRecoveryCodes(null)} />}
      {status.data && !status.data.enabled && (
        <TwoFactorSetup
          onEnabled={async (codes) => {
            setRecoveryCodes(codes);
            await status.reload();
          }}
        />
      )}
      {status.data?.enabled && (
        <>
          <p>
            On. {status.data.recoveryCodesLeft} of 10 recovery codes left.
            {status.data.requiredBy.length > 0 && " A workspace you belong to requires it."}
          </p>
          <h3>Turn off</h3>
          <Form
            class="inline"
            label="Turn off two-factor sign-in"
            submitText="Turn off"
            onSubmit={async ({ code, password }) => {
              await api("POST", "/api/auth/two-factor/disable", code ? { code } : { password });
              await changed();
            }}
          >
            <Field label="Current code (or a recovery code)" name="code" autocomplete="one-time-code" maxLength={32} />
            <Field label="Or your password" name="password" type="password" autocomplete="current-password" maxLength={256} />
          </Form>
        </>
      )}
    </>
  );
}

/** Settings > Members, for owners: whether every member must sign in with two factors. */
export function TwoFactorRequirement() {
  const { session, reload } = useSession();
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const change = async (event: Event) => {
    const box = event.currentTarget as HTMLInputElement;
    setBusy(true);
    setError("");
    try {
      await api("PUT", "/api/organization/two-factor-requirement", { required: box.checked });
      await reload();
    } catch (failure) {
      box.checked = !box.checked;
      setError((failure as Error).message);
    }
    setBusy(false);
  };
  return (
    <>
      <h3>Two-factor sign-in</h3>
      <label class="check">
        <input type="checkbox" checked={session.twoFactorRequired} disabled={busy} onChange={change} />
        Require two-factor sign-in of every member (those without it must set it up before anything else; API keys are not affected)
      </label>
      <ErrorText message={error} />
    </>
  );
}

/** What a session sees first when its workspace requires two-factor sign-in and the account has none. */
export function TwoFactorRequiredPage() {
  const { reload } = useSession();
  const [recoveryCodes, setRecoveryCodes] = useState<string[] | null>(null);
  return (
    <main class="auth">
      <div class="card">
        <p class="brand">Platform</p>
        <h1>Set up two-factor sign-in</h1>
        {recoveryCodes ? (
          <RecoveryCodes codes={recoveryCodes} onDone={() => void reload()} />
        ) : (
          <>
            <p class="muted">This workspace requires two-factor sign-in. Set it up to continue.</p>
            <TwoFactorSetup onEnabled={setRecoveryCodes} />
          </>
        )}
      </div>
    </main>
  );
}

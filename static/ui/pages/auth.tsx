// The pages of someone logged out: the owner setup, the login and an invitation's acceptance.
import type { ComponentChildren } from "preact";
import { useEffect, useLayoutEffect, useState } from "preact/hooks";
import { api, ApiError, segment } from "../api";
import { Field, Form } from "../components/form";

function AuthCard({ title, intro, children }: { title: string; intro?: ComponentChildren; children: ComponentChildren }) {
  // In the commit that shows the form, so the first keys typed already land in its first field.
  useLayoutEffect(() => {
    document.title = `${title} · Platform`;
    document.querySelector<HTMLInputElement>("main.auth input")?.focus();
  }, [title]);
  return (
    <main class="auth">
      <div class="card">
        <p class="brand">Platform</p>
        <h1>{title}</h1>
        {intro && <p class="muted">{intro}</p>}
        {children}
      </div>
    </main>
  );
}

function CredentialFields({ newPassword }: { newPassword: boolean }) {
  return (
    <>
      <Field label="Email" type="email" name="email" required autocomplete="email" />
      <Field
        label="Password"
        type="password"
        name="password"
        required
        minLength={8}
        autocomplete={newPassword ? "new-password" : "current-password"}
        hint={newPassword ? "At least 8 characters." : undefined}
      />
    </>
  );
}

/**
 * The owner setup. When keys were made with `platform keys create` before (`keyRequired`), the
 * account takes them over, so the server wants one of them to know this is the operator. Else,
 * from another machine (`tokenRequired`), it wants the one-time token the server printed at
 * start: the link printed there carries it as `?setup=`, which fills the field in.
 */
export function Setup({ keyRequired, tokenRequired, onDone }: { keyRequired: boolean; tokenRequired: boolean; onDone: () => Promise<void> }) {
  const printedToken = new URLSearchParams(location.search).get("setup");
  const submit = async ({ apiKey, setupToken, ...credentials }: Record<string, string>) => {
    // The command prints a JSON line; pasting all of it works too.
    const key = apiKey && (/svc_[A-Za-z0-9_]+/.exec(apiKey)?.[0] ?? apiKey.trim());
    const token = setupToken?.trim() || printedToken || undefined;
    await api("POST", "/api/auth/setup", { ...credentials, setupToken: token }, key ? { authorization: `Bearer ${key}` } : {});
    // The token is spent: keep it out of the address bar and the history.
    if (printedToken) history.replaceState(null, "", location.pathname + location.hash);
    await onDone();
  };
  return (
    <AuthCard
      title="Create the owner account"
      intro={
        keyRequired
          ? "This platform has no account yet. The owner account takes over the workspaces and keys made with platform keys create."
          : "This platform has no account yet. The first account owns it and its workspace."
      }
    >
      <Form label="Create the owner account" submitText="Create owner account" onSubmit={submit}>
        {tokenRequired && (
          <Field
            label="Setup token"
            type="password"
            name="setupToken"
            class="key-input"
            required
            autocomplete="off"
            spellcheck={false}
            value={printedToken ?? ""}
            hint="Printed in the server's output at start (owner setup: open …/?setup=…). Open that link, or paste the token."
          />
        )}
        {keyRequired && (
          <Field
            label="API key (from platform keys create)"
            type="password"
            name="apiKey"
            class="key-input"
            required
            autocomplete="off"
            spellcheck={false}
            hint="Keys were already made on this server's command line: paste one (svc_...) to show that you run it."
          />
        )}
        <CredentialFields newPassword />
      </Form>
    </AuthCard>
  );
}

/**
 * The second factor, once the server asked for it (401 `TWO_FACTOR_REQUIRED`): it says so whether
 * the password was right or not, so the form keeps both and sends them again with the code.
 */
function SecondFactorField() {
  useLayoutEffect(() => document.querySelector<HTMLInputElement>("input[name=code]")?.focus(), []);
  return (
    <Field
      label="Authentication code"
      name="code"
      required
      autocomplete="one-time-code"
      maxLength={32}
      spellcheck={false}
      hint="The 6-digit code of your authenticator app, or one of your recovery codes."
    />
  );
}

/** Sends a sign-in form; once the server wants a second factor, shows its field (and sends it next time). */
function useSecondFactor(send: (values: Record<string, string>) => Promise<void>) {
  const [asked, setAsked] = useState(false);
  const submit = async (values: Record<string, string>) => {
    try {
      await send(values);
    } catch (failure) {
      if (!(failure instanceof ApiError && failure.code === "TWO_FACTOR_REQUIRED") || asked) throw failure;
      setAsked(true);
    }
  };
  return { asked, submit };
}

export function Login({ notice, onDone }: { notice?: string; onDone: () => Promise<void> }) {
  const { asked, submit } = useSecondFactor(async (values) => {
    await api("POST", "/api/auth/login", values);
    await onDone();
  });
  return (
    <AuthCard title="Log in" intro={asked ? "Enter the code of your authenticator app to log in." : notice}>
      <Form label="Log in" submitText="Log in" onSubmit={submit}>
        <CredentialFields newPassword={false} />
        {asked && <SecondFactorField />}
      </Form>
    </AuthCard>
  );
}

export function Invite({ invitationId, onAccepted }: { invitationId: string; onAccepted: () => void }) {
  const [preview, setPreview] = useState<{ heading: string; intro: string } | null>(null);
  const { asked, submit } = useSecondFactor(async (values) => {
    await api("POST", `/api/organization/invitations/${segment(invitationId)}/accept`, values);
    onAccepted();
  });
  useEffect(() => {
    api("GET", `/api/organization/invitations/${segment(invitationId)}/preview`)
      .then(({ invitation }) =>
        setPreview({
          heading: `Join ${invitation.organizationName}`,
          intro: `${invitation.email} was invited to ${invitation.organizationName} as ${invitation.role}.`,
        }),
      )
      // Unknown or used invitations still show the form; accepting then says what is wrong.
      .catch(() => setPreview({ heading: "Join a workspace", intro: "You were invited to a workspace on this platform." }));
  }, [invitationId]);
  if (!preview) return <p class="loading">Loading…</p>;
  return (
    <AuthCard
      title={preview.heading}
      intro={`${preview.intro} Choose a password for your new account, or enter the password of the account you already have with the invited email.`}
    >
      <Form label="Accept the invitation" submitText="Accept invitation" onSubmit={submit}>
        <Field label="Password" type="password" name="password" required minLength={8} autocomplete="new-password" hint="At least 8 characters." />
        {asked && <SecondFactorField />}
      </Form>
    </AuthCard>
  );
}

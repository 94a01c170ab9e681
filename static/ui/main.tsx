// The built-in dashboard: a page over the platform's public JSON API (./api.ts), with the session
// cookie, routed by the hash (./router.ts). Logged out it shows the owner setup, the login or an
// invitation (./pages/auth.tsx); logged in, the workspace's sections (./pages/workspace.tsx).
// Built by `bun scripts/build-dashboard.ts` into static/app.js, which the binary embeds.
import { render } from "preact";
import { useCallback, useEffect, useMemo, useState } from "preact/hooks";
import { api, ApiError } from "./api";
import { Invite, Login, Setup } from "./pages/auth";
import { Workspace } from "./pages/workspace";
import { Spinner } from "./components/widgets";
import { useRoute } from "./router";
import { SessionContext, type Session, type SessionControl } from "./session";

type View =
  | { kind: "loading" }
  | { kind: "failed"; message: string }
  | { kind: "setup"; keyRequired: boolean; tokenRequired: boolean }
  | { kind: "login"; notice?: string }
  | { kind: "workspace"; session: Session };

function App() {
  const route = useRoute();
  const [view, setView] = useState<View>({ kind: "loading" });
  const inviting = route[0] === "invite" && route[1] !== undefined;

  const enter = useCallback(async () => {
    setView({ kind: "workspace", session: await api<Session>("GET", "/api/auth/session") });
  }, []);
  const start = useCallback(async () => {
    try {
      const { setupRequired, keyRequired, tokenRequired } = await api("GET", "/api/auth/setup");
      if (setupRequired) return setView({ kind: "setup", keyRequired, tokenRequired });
      await enter();
    } catch (failure) {
      if (failure instanceof ApiError && failure.status === 401) setView({ kind: "login" });
      // A refusal with a reason (two session cookies, say) is shown as it is; anything else, the server did not answer.
      else if (failure instanceof ApiError && failure.status > 0 && failure.code) setView({ kind: "failed", message: failure.message });
      else setView({ kind: "failed", message: `The platform did not answer: ${(failure as Error).message}` });
    }
  }, [enter]);

  useEffect(() => {
    if (!inviting) void start();
  }, [inviting, start]);

  const control = useMemo<SessionControl | null>(
    () =>
      view.kind === "workspace"
        ? { session: view.session, reload: enter, ended: (notice?: string) => setView({ kind: "login", notice }) }
        : null,
    [view, enter],
  );

  if (inviting) {
    return (
      <Invite
        invitationId={route[1]!}
        onAccepted={() => {
          setView({ kind: "loading" });
          location.hash = "#/apps";
        }}
      />
    );
  }
  switch (view.kind) {
    case "loading":
      return (
        <p class="loading">
          <Spinner />
        </p>
      );
    case "failed":
      return (
        <p class="error page-error" role="alert">
          {view.message}
        </p>
      );
    case "setup":
      return <Setup keyRequired={view.keyRequired} tokenRequired={view.tokenRequired} onDone={enter} />;
    case "login":
      return <Login notice={view.notice} onDone={enter} />;
    case "workspace":
      return (
        <SessionContext.Provider value={control}>
          <Workspace />
        </SessionContext.Provider>
      );
  }
}

render(<App />, document.getElementById("app")!);

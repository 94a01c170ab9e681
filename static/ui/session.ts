// Who is logged in (GET /api/auth/session), shared with every page of the workspace, and how a
// page says the session ended (any 401): the dashboard then shows the login again.
import { createContext } from "preact";
import { useCallback, useContext, useEffect, useRef, useState } from "preact/hooks";
import { ApiError } from "./api";

export interface Session {
  user: { id: string; email: string };
  role: "owner" | "admin" | "member" | "viewer";
  activeOrganizationId: string;
  organizations: { id: string; name: string }[];
  /** The routes the user's role may call, as `POST /api/apps/{appId}/stop` (src/http/permissions.ts). */
  permissions: string[];
  twoFactorEnabled: boolean;
  /** The workspace requires two-factor sign-in: without it, the session may only set it up. */
  twoFactorRequired: boolean;
}

/**
 * The user's role may call `route` (written as in the session's `permissions`): a page offers an
 * action only then, rather than a button the API would refuse with 403.
 */
export const may = (session: Session, route: string): boolean => session.permissions.includes(route);

export interface SessionControl {
  session: Session;
  /** Reads the session again (after a workspace switch). */
  reload(): Promise<void>;
  /** The session is over: back to the login, with a sentence saying why. */
  ended(notice?: string): void;
}

export const SessionContext = createContext<SessionControl | null>(null);

export function useSession(): SessionControl {
  const control = useContext(SessionContext);
  if (!control) throw new Error("useSession outside a logged-in page");
  return control;
}

export interface Loaded<Data> {
  data: Data | null;
  error: string;
  reload(): Promise<void>;
}

/**
 * What a page shows, loaded when it mounts and again on reload(). A 401 ends the session; any other
 * failure is the page's `error`. An answer belongs to the dependencies it was asked with: once they
 * change (another folder, another app), the previous answer is no longer shown, and a late answer
 * to an earlier question is dropped.
 */
export function useLoad<Data>(load: () => Promise<Data>, dependencies: unknown[] = []): Loaded<Data> {
  const { ended } = useSession();
  const [answer, setAnswer] = useState<{ to: unknown; data: Data | null; error: string }>({ to: null, data: null, error: "" });
  const currentReload = useRef<unknown>(null);
  const reload = useCallback(async () => {
    try {
      const data = await load();
      if (currentReload.current === reload) setAnswer({ to: reload, data, error: "" });
    } catch (failure) {
      if (failure instanceof ApiError && failure.status === 401) ended("Your session ended. Log in again.");
      else if (currentReload.current === reload) setAnswer((previous) => ({ to: reload, data: previous.to === reload ? previous.data : null, error: (failure as Error).message }));
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, dependencies);
  currentReload.current = reload;
  useEffect(() => {
    void reload();
  }, [reload]);
  const current = answer.to === reload;
  return { data: current ? answer.data : null, error: current ? answer.error : "", reload };
}

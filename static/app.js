// The built-in dashboard: a small hash-routed page over the platform's JSON API.
// Plain ES module, no build step. Elements are built with h() and text nodes, never innerHTML,
// so names and emails from the API cannot inject markup.

const root = document.getElementById("app");

/** The logged-in session (GET /api/auth/session), or null while logged out. */
let session = null;

// ---------------------------------------------------------------------------------------------
// API

class ApiFailure extends Error {
  constructor(message, status, code) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** Calls the API and returns the payload of the envelope; throws ApiFailure with its message. */
async function api(method, path, body, headers = {}) {
  const init = { method, headers: { accept: "application/json", ...headers } };
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const envelope = await response.json().catch(() => null);
  if (!response.ok || !envelope?.success) {
    throw new ApiFailure(envelope?.error ?? `Request failed with HTTP ${response.status}`, response.status, envelope?.code);
  }
  return envelope.data ?? envelope;
}

// ---------------------------------------------------------------------------------------------
// DOM helpers

/** h("button", { type: "submit", onclick }, "Save"): an element with attributes, listeners and children. */
function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value == null || value === false) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else if (name === "value" || name === "checked") element[name] = value;
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  element.append(...children.flat(Infinity).filter((child) => child != null && child !== false));
  return element;
}

/** A labelled form control: the label wraps its input, so no ids are needed. */
function field(label, inputProps, hint) {
  const control = inputProps.options
    ? h("select", { name: inputProps.name }, inputProps.options.map(([value, text]) => h("option", { value }, text)))
    : h("input", inputProps);
  return h("label", { class: "field" }, h("span", { class: "field-label" }, label), control, hint && h("small", {}, hint));
}

/**
 * A form that hands its values to `onSubmit` and shows the thrown error's message under the
 * button. The button is disabled while the request runs so a double click sends once.
 */
function form(props, fields, submitText, onSubmit) {
  const error = h("p", { class: "error", role: "alert" });
  const submit = h("button", { type: "submit", class: "primary" }, submitText);
  const element = h("form", props, fields, h("div", { class: "form-actions" }, submit), error);
  element.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.textContent = "";
    submit.disabled = true;
    try {
      await onSubmit(Object.fromEntries(new FormData(element)), element);
    } catch (failure) {
      error.textContent = failure.message;
    } finally {
      submit.disabled = false;
    }
  });
  return element;
}

/** A click handler that runs with its button disabled and shows failures in `errorTarget`. */
function action(run, errorTarget) {
  return async (event) => {
    const button = event.currentTarget;
    button.disabled = true;
    errorTarget.textContent = "";
    try {
      await run();
    } catch (failure) {
      errorTarget.textContent = failure.message;
    } finally {
      button.disabled = false;
    }
  };
}

function table(caption, headings, rows, emptyText) {
  if (rows.length === 0) return h("p", { class: "empty" }, emptyText);
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      {},
      h("caption", { class: "visually-hidden" }, caption),
      h("thead", {}, h("tr", {}, headings.map((heading) => h("th", { scope: "col" }, heading)))),
      h("tbody", {}, rows.map((cells) => h("tr", {}, cells.map((cell) => h("td", {}, cell))))),
    ),
  );
}

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

function when(iso, emptyText = "—") {
  return iso ? h("time", { datetime: iso, title: iso }, dateFormat.format(new Date(iso))) : emptyText;
}

async function copy(text, button) {
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = "Copied";
  } catch {
    button.textContent = "Copy failed: select the text";
  }
  setTimeout(() => (button.textContent = "Copy"), 2000);
}

// ---------------------------------------------------------------------------------------------
// Routing: #/apps, #/databases, #/settings/developer, #/settings/members, #/settings/audit-log,
// and #/invite/<invitationId> (the only page that works logged out).

const SECTIONS = [
  { path: "apps", title: "Apps", render: renderApps },
  { path: "databases", title: "Databases", render: renderDatabases },
  { path: "settings", title: "Settings", render: renderSettings },
];

const SETTINGS_TABS = [
  { path: "developer", title: "Developer", render: renderDeveloper },
  { path: "members", title: "Members", render: renderMembers },
  { path: "audit-log", title: "Audit log", render: renderAuditLog },
];

function route() {
  return location.hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
}

async function start() {
  const [first, invitationId] = route();
  if (first === "invite" && invitationId) return showInvite(invitationId);
  try {
    const { setupRequired, keyRequired, tokenRequired } = await api("GET", "/api/auth/setup");
    if (setupRequired) return showSetup(keyRequired, tokenRequired);
    session = await api("GET", "/api/auth/session");
    showWorkspace();
  } catch (failure) {
    if (failure.status === 401) return showLogin();
    root.replaceChildren(h("p", { class: "error page-error", role: "alert" }, `The platform did not answer: ${failure.message}`));
  }
}

window.addEventListener("hashchange", () => {
  const [first] = route();
  if (first === "invite" || !session) start();
  else renderContent();
});

// ---------------------------------------------------------------------------------------------
// Logged out: owner setup, login, invitation acceptance

function authCard(title, intro, body) {
  document.title = `${title} · Platform`;
  const heading = h("h1", {}, title);
  root.replaceChildren(h("main", { class: "auth" }, h("div", { class: "card" }, h("p", { class: "brand" }, "Platform"), heading, intro && h("p", { class: "muted" }, intro), body)));
  root.querySelector("input")?.focus();
}

function credentialFields(passwordAutocomplete) {
  return [
    field("Email", { type: "email", name: "email", required: true, autocomplete: "email" }),
    field("Password", { type: "password", name: "password", required: true, minlength: 8, autocomplete: passwordAutocomplete }, passwordAutocomplete === "new-password" && "At least 8 characters."),
  ];
}

async function enterWorkspace() {
  session = await api("GET", "/api/auth/session");
  showWorkspace();
}

/**
 * The owner setup. When keys were made with `platform keys create` before (`keyRequired`), the
 * account takes them over, so the server wants one of them to know this is the operator. Else,
 * from another machine (`tokenRequired`), it wants the one-time token the server printed at
 * start: the link printed there carries it as `?setup=`, which fills the field in.
 */
function showSetup(keyRequired, tokenRequired) {
  const printedToken = new URLSearchParams(location.search).get("setup");
  const tokenField =
    tokenRequired &&
    field(
      "Setup token",
      { type: "password", name: "setupToken", class: "key-input", required: true, autocomplete: "off", spellcheck: "false", value: printedToken ?? "" },
      "Printed in the server's output at start (owner setup: open …/?setup=…). Open that link, or paste the token.",
    );
  const keyField =
    keyRequired &&
    field(
      "API key (from platform keys create)",
      { type: "password", name: "apiKey", class: "key-input", required: true, autocomplete: "off", spellcheck: "false" },
      "Keys were already made on this server's command line: paste one (svc_...) to show that you run it.",
    );
  authCard(
    "Create the owner account",
    keyRequired
      ? "This platform has no account yet. The owner account takes over the workspaces and keys made with platform keys create."
      : "This platform has no account yet. The first account owns it and its workspace.",
    form({ "aria-label": "Create the owner account" }, [tokenField, keyField, credentialFields("new-password")], "Create owner account", async ({ apiKey, setupToken, ...credentials }) => {
      // The command prints a JSON line; pasting all of it works too.
      const key = apiKey && (/svc_[A-Za-z0-9_]+/.exec(apiKey)?.[0] ?? apiKey.trim());
      const token = setupToken?.trim() || printedToken || undefined;
      await api("POST", "/api/auth/setup", { ...credentials, setupToken: token }, key ? { authorization: `Bearer ${key}` } : {});
      // The token is spent: keep it out of the address bar and the history.
      if (printedToken) history.replaceState(null, "", location.pathname + location.hash);
      await enterWorkspace();
    }),
  );
}

function showLogin(notice) {
  session = null;
  authCard(
    "Log in",
    notice,
    form({ "aria-label": "Log in" }, credentialFields("current-password"), "Log in", async (values) => {
      await api("POST", "/api/auth/login", values);
      await enterWorkspace();
    }),
  );
}

async function showInvite(invitationId) {
  let heading = "Join a workspace";
  let intro = "You were invited to a workspace on this platform.";
  try {
    const { invitation } = await api("GET", `/api/organization/invitations/${encodeURIComponent(invitationId)}/preview`);
    heading = `Join ${invitation.organizationName}`;
    intro = `${invitation.email} was invited to ${invitation.organizationName} as ${invitation.role}.`;
  } catch {
    // Unknown or used invitations still show the form; accepting then says what is wrong.
  }
  authCard(
    heading,
    `${intro} Choose a password for your new account, or enter the password of the account you already have with the invited email.`,
    form(
      { "aria-label": "Accept the invitation" },
      [field("Password", { type: "password", name: "password", required: true, minlength: 8, autocomplete: "new-password" }, "At least 8 characters.")],
      "Accept invitation",
      async (values) => {
        await api("POST", `/api/organization/invitations/${encodeURIComponent(invitationId)}/accept`, values);
        session = null;
        location.hash = "#/apps";
      },
    ),
  );
}

// ---------------------------------------------------------------------------------------------
// Logged in: header, navigation and the current section

let content = null;

function showWorkspace() {
  const organizations = session.organizations ?? [];
  const switcher = h(
    "select",
    {
      name: "organizationId",
      onchange: async (event) => {
        try {
          await api("POST", "/api/auth/set-active-organization", { organizationId: event.target.value });
          await enterWorkspace();
        } catch (failure) {
          event.target.value = session.activeOrganizationId;
          alert(`Could not switch workspace: ${failure.message}`);
        }
      },
    },
    organizations.map((organization) => h("option", { value: organization.id }, organization.name)),
  );
  switcher.value = session.activeOrganizationId;

  const logout = h("button", { type: "button", class: "quiet" }, "Log out");
  logout.addEventListener("click", async () => {
    try {
      await api("POST", "/api/auth/logout");
    } catch (failure) {
      // 401: the session had already ended, which is what logging out wants.
      if (failure.status !== 401) return alert(`Could not log out: ${failure.message}`);
    }
    showLogin();
  });

  content = h("main", { id: "content", tabindex: "-1" });
  root.replaceChildren(
    h(
      "header",
      { class: "topbar" },
      h("a", { class: "brand", href: "#/apps" }, "Platform"),
      h("label", { class: "switcher" }, h("span", {}, "Workspace"), switcher),
      h("span", { class: "spacer" }),
      h("span", { class: "user", title: `Role: ${session.role}` }, session.user.email),
      logout,
    ),
    h(
      "div",
      { class: "layout" },
      h("nav", { class: "sidebar", "aria-label": "Sections" }, h("ul", {}, SECTIONS.map((section) => h("li", {}, h("a", { href: `#/${section.path}`, "data-section": section.path }, section.title))))),
      content,
    ),
  );
  renderContent();
}

function renderContent() {
  const [first] = route();
  const section = SECTIONS.find((candidate) => candidate.path === first) ?? SECTIONS[0];
  for (const link of root.querySelectorAll(".sidebar a")) {
    if (link.dataset.section === section.path) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  document.title = `${section.title} · Platform`;
  content.replaceChildren();
  section.render(content).catch((failure) => {
    if (failure.status === 401) return showLogin("Your session ended. Log in again.");
    content.append(h("p", { class: "error", role: "alert" }, failure.message));
  });
}

async function renderApps(container) {
  container.append(
    h("h1", {}, "Apps"),
    h(
      "div",
      { class: "placeholder" },
      h("p", {}, "No apps yet. Deploying and managing apps from the dashboard comes in a later version."),
      h("p", {}, "Meanwhile the API can do it: create a key in ", h("a", { href: "#/settings/developer" }, "Settings › Developer"), " and see the ", h("a", { href: "/api/docs" }, "API reference"), "."),
    ),
  );
}

async function renderDatabases(container) {
  container.append(
    h("h1", {}, "Databases"),
    h("div", { class: "placeholder" }, h("p", {}, "No databases yet. Provisioning PostgreSQL, MySQL, MongoDB and Redis from the dashboard comes in a later version.")),
  );
}

async function renderSettings(container) {
  const [, tabPath] = route();
  const tab = SETTINGS_TABS.find((candidate) => candidate.path === tabPath) ?? SETTINGS_TABS[0];
  document.title = `${tab.title} · Settings · Platform`;
  const panel = h("section", { class: "panel", "aria-label": tab.title });
  container.append(
    h("h1", {}, "Settings"),
    h(
      "nav",
      { class: "tabs", "aria-label": "Settings" },
      SETTINGS_TABS.map((candidate) =>
        h("a", { href: `#/settings/${candidate.path}`, "aria-current": candidate === tab ? "page" : null }, candidate.title),
      ),
    ),
    panel,
  );
  await tab.render(panel);
}

// ---------------------------------------------------------------------------------------------
// Settings > Developer: API keys

async function renderDeveloper(panel) {
  const revealed = h("div", { role: "status" });
  const list = h("div");
  const listError = h("p", { class: "error", role: "alert" });

  async function refresh() {
    const { keys } = await api("GET", "/api/api-keys/");
    list.replaceChildren(
      table(
        "API keys",
        ["Name", "Key", "Created", "Last used", "Expires", "Enabled", ""],
        keys.map((key) => [
          key.name,
          h("code", {}, `${key.start ?? key.prefix}…`),
          when(key.createdAt),
          when(key.lastUsedAt, "Never"),
          when(key.expiresAt, "Never"),
          h("input", {
            type: "checkbox",
            role: "switch",
            checked: key.enabled,
            "aria-label": `Enable ${key.name}`,
            onchange: async (event) => {
              const toggle = event.target;
              toggle.disabled = true;
              listError.textContent = "";
              try {
                await api("PUT", `/api/api-keys/${encodeURIComponent(key.id)}`, { enabled: toggle.checked });
              } catch (failure) {
                toggle.checked = !toggle.checked;
                listError.textContent = failure.message;
              }
              toggle.disabled = false;
            },
          }),
          h(
            "button",
            {
              type: "button",
              class: "danger",
              "aria-label": `Revoke ${key.name}`,
              onclick: action(async () => {
                if (!confirm(`Revoke the key "${key.name}"? Anything using it stops working at once.`)) return;
                await api("DELETE", `/api/api-keys/${encodeURIComponent(key.id)}`);
                await refresh();
              }, listError),
            },
            "Revoke",
          ),
        ]),
        "No API keys yet.",
      ),
    );
  }

  const createForm = form(
    { class: "inline", "aria-label": "New key" },
    [
      field("Name", { name: "name", required: true, maxlength: 100, placeholder: "ci-deploy" }),
      field("Expires in (days)", { name: "expiresInDays", type: "number", min: 1, max: 3650, step: 1, placeholder: "Never" }),
    ],
    "Create key",
    async (values, element) => {
      const body = { name: values.name.trim() };
      if (values.expiresInDays) body.expiresIn = Number(values.expiresInDays) * 86400;
      const created = await api("POST", "/api/api-keys/", body);
      element.reset();
      const copyButton = h("button", { type: "button", onclick: () => copy(created.key, copyButton) }, "Copy");
      revealed.replaceChildren(
        h(
          "div",
          { class: "callout" },
          h("p", {}, h("strong", {}, `Your new key "${body.name}". `), "Copy it now: it won't be shown again."),
          h("div", { class: "secret" }, h("code", { "data-testid": "new-key" }, created.key), copyButton),
          h("button", { type: "button", class: "quiet", onclick: () => revealed.replaceChildren() }, "Done"),
        ),
      );
      await refresh();
    },
  );

  panel.append(
    h("h2", {}, "API keys"),
    h("p", { class: "muted" }, "Keys authenticate calls to the API: send ", h("code", {}, "Authorization: Bearer svc_…"), ". A key acts as you in this workspace."),
    h("h3", {}, "New key"),
    createForm,
    revealed,
    h("h3", {}, "Your keys"),
    listError,
    list,
  );
  await refresh();
}

// ---------------------------------------------------------------------------------------------
// Settings > Members: members and invitations

const inviteLink = (invitationId) => `${location.origin}/#/invite/${encodeURIComponent(invitationId)}`;

async function renderMembers(panel) {
  const canManage = session.role === "owner" || session.role === "admin";
  const membersList = h("div");
  const invitationsList = h("div");
  const invitationsError = h("p", { class: "error", role: "alert" });

  async function refreshInvitations() {
    const { invitations } = await api("GET", "/api/organization/invitations");
    invitationsList.replaceChildren(
      table(
        "Invitations",
        ["Email", "Role", "Status", "Expires", "Invite link", ""],
        invitations.map((invitation) => {
          const pending = invitation.status === "pending";
          const link = inviteLink(invitation.id);
          const copyButton = h("button", { type: "button", onclick: () => copy(link, copyButton) }, "Copy");
          return [
            invitation.email,
            invitation.role,
            h("span", { class: `badge ${invitation.status}` }, invitation.status),
            pending ? when(invitation.expiresAt) : "—",
            pending
              ? h("div", { class: "secret" }, h("input", { type: "text", readonly: true, value: link, "aria-label": `Invite link for ${invitation.email}`, onfocus: (event) => event.target.select() }), copyButton)
              : "—",
            pending && canManage
              ? h(
                  "button",
                  {
                    type: "button",
                    class: "danger",
                    "aria-label": `Cancel invitation for ${invitation.email}`,
                    onclick: action(async () => {
                      await api("DELETE", `/api/organization/invitations/${encodeURIComponent(invitation.id)}`);
                      await refreshInvitations();
                    }, invitationsError),
                  },
                  "Cancel",
                )
              : "",
          ];
        }),
        "No invitations.",
      ),
    );
  }

  const { members } = await api("GET", "/api/organization/members");
  membersList.append(
    table(
      "Members",
      ["Email", "Role", "Joined"],
      members.map((member) => [member.email + (member.userId === session.user.id ? " (you)" : ""), member.role, when(member.joinedAt)]),
      "No members.",
    ),
  );

  panel.append(h("h2", {}, "Members"), membersList, h("h2", {}, "Invitations"));
  if (canManage) {
    panel.append(
      h("p", { class: "muted" }, "Invite someone by email, then send them the invite link. It is valid for 48 hours."),
      form(
        { class: "inline", "aria-label": "Invite a member" },
        [
          field("Email", { type: "email", name: "email", required: true, autocomplete: "off" }),
          field("Role", { name: "role", options: [["member", "Member"], ["admin", "Admin"], ["viewer", "Viewer (read-only)"]] }),
        ],
        "Invite",
        async (values, element) => {
          await api("POST", "/api/organization/invitations", values);
          element.reset();
          await refreshInvitations();
        },
      ),
    );
  }
  panel.append(invitationsError, invitationsList);
  await refreshInvitations();
}

// ---------------------------------------------------------------------------------------------
// Settings > Audit log

const ACTION_LABELS = {
  "api_key.created": "API key created",
  "api_key.updated": "API key updated",
  "api_key.revoked": "API key revoked",
  "auth.login": "Logged in",
  "auth.login_failed": "Failed login",
  "auth.owner_created": "Owner account created",
  "invitation.created": "Invitation sent",
  "invitation.canceled": "Invitation canceled",
  "invitation.accepted": "Invitation accepted",
  "auth.owner_claimed": "Owner account claimed",
  "member.role_changed": "Member's role changed",
  "member.removed": "Member removed",
  "app.deployed": "App deployed",
  "app.started": "App started",
  "app.stopped": "App stopped",
  "app.restarted": "App restarted",
  "app.deleted": "App deleted",
  "app.env_changed": "App env vars changed",
  "app.settings_changed": "App settings changed",
  "build.canceled": "Build canceled",
  "database.created": "Database created",
  "database.started": "Database started",
  "database.stopped": "Database stopped",
  "database.deleted": "Database deleted",
  "database.settings_changed": "Database settings changed",
  "database.password_rotated": "Database password rotated",
};

async function renderAuditLog(panel) {
  const [{ events }, { members }] = await Promise.all([
    api("GET", "/api/organization/audit-log"),
    api("GET", "/api/organization/members"),
  ]);
  const emailOf = new Map(members.map((member) => [member.userId, member.email]));
  const actorText = (actor) => {
    if (actor.type === "user") return emailOf.get(actor.id) ?? `user ${actor.id}`;
    if (actor.type === "api_key") return `API key ${actor.id}`;
    if (actor.type === "cli") return "command line";
    return actor.type;
  };
  panel.append(
    h("h2", {}, "Audit log"),
    h("p", { class: "muted" }, "Security events of this workspace, newest first."),
    table(
      "Audit log",
      ["Time", "Event", "Actor", "Target", "Address"],
      events.map((event) => [
        when(event.createdAt),
        h("span", { title: event.action }, ACTION_LABELS[event.action] ?? event.action),
        actorText(event.actor),
        event.target ?? "—",
        event.clientAddress ?? "—",
      ]),
      "No events yet.",
    ),
  );
}

start();

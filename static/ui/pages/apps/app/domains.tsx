// Domains tab: the app's own host names, each with the TXT record that proves the workspace owns it
// (whether it was found, and whether it is still published), its certificate and whether its DNS
// points here; add one, check its record now, remove one, give a verified one a certificate of its own (PEM) or send it back to
// automatic ones.
import { useState } from "preact/hooks";
import { api, segment } from "../../../api";
import { ActionButton, Field, Form } from "../../../components/form";
import { Table } from "../../../components/table";
import { CopyButton, ErrorText, When } from "../../../components/text";
import { Spinner, StatusBadge } from "../../../components/widgets";
import { may, useLoad, useSession } from "../../../session";
import type { CertificateStatus, TabProps } from "./types";

interface AppDomain {
  id: string;
  domain: string;
  unicodeDomain: string;
  url: string;
  verification: {
    status: "pending" | "verified" | "lost";
    record: { type: string; name: string; value: string };
    recordPresent: boolean | null;
    message: string | null;
  };
  certificate: CertificateStatus;
  dns: { status: string; message: string | null; addresses: string[] };
  createdAt: string;
}

/** Where a served certificate came from, in words. */
const CERTIFICATE_SOURCES: Record<string, string> = { acme: "from the ACME CA", uploaded: "your own", platform: "the platform's own" };

export function DomainsTab({ app }: TabProps) {
  const { session } = useSession();
  const canAdd = may(session, "POST /api/apps/{appId}/domains");
  const canVerify = may(session, "POST /api/apps/{appId}/domains/{domainId}/verify");
  const canRemove = may(session, "DELETE /api/apps/{appId}/domains/{domainId}");
  const canUpload = may(session, "PUT /api/apps/{appId}/domains/{domainId}/certificate");
  const canDropCertificate = may(session, "DELETE /api/apps/{appId}/domains/{domainId}/certificate");
  const hasActions = canRemove || canUpload || canDropCertificate || canVerify;
  const base = `/api/apps/${segment(app.id)}/domains`;
  const domains = useLoad(() => api<{ domains: AppDomain[] }>("GET", base).then(({ domains }) => domains), [app.id]);
  const [error, setError] = useState("");
  const [certifying, setCertifying] = useState<AppDomain | null>(null);

  const add = async (values: Record<string, string>, form: HTMLFormElement) => {
    await api("POST", base, { domain: values.domain!.trim() });
    form.reset();
    await domains.reload();
  };
  const automatic = async (domain: AppDomain) => {
    if (!confirm(`Stop serving your own certificate for ${domain.unicodeDomain}? The platform's certificates take over.`)) return;
    await api("DELETE", `${base}/${segment(domain.id)}/certificate`);
    await domains.reload();
  };
  const checkNow = async (domain: AppDomain) => {
    const { domain: checked } = await api<{ domain: AppDomain }>("POST", `${base}/${segment(domain.id)}/verify`);
    await domains.reload();
    if (checked.verification.message) setError(checked.verification.message);
    else if (checked.verification.status !== "verified") setError(`${domain.unicodeDomain} is not verified yet.`);
  };
  const remove = async (domain: AppDomain) => {
    if (!confirm(`Remove ${domain.unicodeDomain} from ${app.name}? The proxy stops routing it at once.`)) return;
    await api("DELETE", `${base}/${segment(domain.id)}`);
    await domains.reload();
  };

  return (
    <>
      <h2>Domains</h2>
      <p class="muted">
        {app.url ? (
          <>
            Always at <a href={app.url}>{app.url}</a>.{canAdd && ` ${ADD_HINT}`}
          </>
        ) : (
          canAdd && ADD_HINT
        )}
      </p>
      {canAdd && (
        <Form class="inline" label="Add a domain" submitText="Add domain" onSubmit={add}>
          <Field label="Domain" name="domain" required maxLength={300} placeholder="www.example.com" autocomplete="off" spellcheck={false} />
        </Form>
      )}
      <ErrorText message={error || domains.error} />
      {!domains.data && !domains.error && <Spinner />}
      {domains.data && (
        <Table
          caption="The app's domains"
          headings={["Domain", "Ownership", "Certificate", "DNS", "Added", ...(hasActions ? ["Actions"] : [])]}
          empty="No custom domains yet."
          rowKeys={domains.data.map((domain) => domain.id)}
          rows={domains.data.map((domain) => {
            const cells = [
            <a href={domain.url} target="_blank" rel="noopener noreferrer">
              {domain.unicodeDomain}
            </a>,
            <Ownership domain={domain} />,
            <div class="domain-status">
              <StatusBadge status={domain.certificate.status} />
              {domain.certificate.source && <small>{CERTIFICATE_SOURCES[domain.certificate.source] ?? domain.certificate.source}</small>}
              {domain.certificate.expiresAt && (
                <small>
                  expires <When iso={domain.certificate.expiresAt} />
                </small>
              )}
              {domain.certificate.lastError && <small class="error-inline">{domain.certificate.lastError}</small>}
            </div>,
            <div class="domain-status">
              <StatusBadge status={domain.dns.status} />
              {domain.dns.message && <small>{domain.dns.message}</small>}
            </div>,
            <When iso={domain.createdAt} />,
            ];
            if (!hasActions) return cells;
            return [
              ...cells,
              <span class="domain-actions">
                {canVerify && (
                  <ActionButton label={`Check now the TXT record of ${domain.unicodeDomain}`} run={() => checkNow(domain)} onError={setError}>
                    Check now
                  </ActionButton>
                )}
                {canUpload && domain.verification.status === "verified" && (
                  <button type="button" aria-label={`Own certificate for ${domain.unicodeDomain}`} onClick={() => setCertifying(domain)}>
                    Own certificate…
                  </button>
                )}
                {canDropCertificate && domain.certificate.source === "uploaded" && (
                  <ActionButton label={`Back to automatic certificates for ${domain.unicodeDomain}`} run={() => automatic(domain)} onError={setError}>
                    Back to automatic
                  </ActionButton>
                )}
                {canRemove && (
                  <ActionButton class="danger" label={`Remove ${domain.unicodeDomain}`} run={() => remove(domain)} onError={setError}>
                    Remove
                  </ActionButton>
                )}
              </span>,
            ];
          })}
        />
      )}
      {certifying && (
        <CertificateForm
          key={certifying.id}
          path={`${base}/${segment(certifying.id)}/certificate`}
          domain={certifying.unicodeDomain}
          onDone={async () => {
            setCertifying(null);
            await domains.reload();
          }}
          onCancel={() => setCertifying(null)}
        />
      )}
    </>
  );
}

const ADD_HINT = "Add your own names below, prove each with the TXT record shown, and point their DNS at this server.";

/**
 * Whether the workspace proved it owns the domain; the record to create until it has, or once it
 * is gone (another workspace that proves the name then takes it over).
 */
function Ownership({ domain }: { domain: AppDomain }) {
  const { status, record, recordPresent, message } = domain.verification;
  return (
    <div class="domain-status">
      <StatusBadge status={status} />
      {(status !== "verified" || recordPresent === false) && (
        <dl class="domain-record" aria-label={`TXT record to create for ${domain.unicodeDomain}`}>
          <dt>{record.type} record</dt>
          <dd>
            <code>{record.name}</code> <CopyButton text={record.name} label={`the record name for ${domain.unicodeDomain}`} />
          </dd>
          <dt>Value</dt>
          <dd>
            <code>{record.value}</code> <CopyButton text={record.value} label={`the record value for ${domain.unicodeDomain}`} />
          </dd>
        </dl>
      )}
      {message && <small class={status === "lost" || recordPresent === false ? "error-inline" : undefined}>{message}</small>}
    </div>
  );
}

/** A certificate of the person's own for one domain: the PEM chain and its key, pasted or read from files. */
function CertificateForm(props: { path: string; domain: string; onDone(): Promise<void>; onCancel(): void }) {
  const [certificate, setCertificate] = useState("");
  const [privateKey, setPrivateKey] = useState("");
  const upload = async () => {
    await api("PUT", props.path, { certificate, privateKey });
    await props.onDone();
  };
  const readInto = (set: (text: string) => void) => async (event: Event) => {
    const file = (event.currentTarget as HTMLInputElement).files?.[0];
    if (file) set(await file.text());
  };
  return (
    <section class="domain-certificate" aria-label={`Own certificate for ${props.domain}`}>
      <h3>Own certificate for {props.domain}</h3>
      <p class="muted">Served from the next connection on, in place of an automatic one. It must name the domain, match its key and be valid now.</p>
      <Form label={`Upload a certificate for ${props.domain}`} submitText="Use this certificate" onSubmit={upload}>
        <label class="field">
          <span class="field-label">Certificate (PEM, the chain after it)</span>
          <textarea rows={6} required spellcheck={false} value={certificate} placeholder="-----BEGIN CERTIFICATE-----" onInput={(event) => setCertificate((event.currentTarget as HTMLTextAreaElement).value)} />
        </label>
        <Field label="or read the certificate from a file" type="file" accept=".pem,.crt,.cer" onChange={readInto(setCertificate)} />
        <label class="field">
          <span class="field-label">Private key (PEM)</span>
          <textarea rows={6} required spellcheck={false} value={privateKey} placeholder="-----BEGIN PRIVATE KEY-----" onInput={(event) => setPrivateKey((event.currentTarget as HTMLTextAreaElement).value)} />
        </label>
        <Field label="or read the key from a file" type="file" accept=".pem,.key" onChange={readInto(setPrivateKey)} />
      </Form>
      <button type="button" class="quiet" onClick={props.onCancel}>
        Cancel
      </button>
    </section>
  );
}

// Domains tab: the app's own host names, each with its certificate and whether its DNS points here;
// add one, remove one.
import { useState } from "preact/hooks";
import { api, segment } from "../../../api";
import { ActionButton, Field, Form } from "../../../components/form";
import { Table } from "../../../components/table";
import { ErrorText, When } from "../../../components/text";
import { Spinner, StatusBadge } from "../../../components/widgets";
import { useLoad } from "../../../session";
import type { CertificateStatus, TabProps } from "./types";

interface AppDomain {
  id: string;
  domain: string;
  unicodeDomain: string;
  url: string;
  certificate: CertificateStatus;
  dns: { status: string; message: string | null; addresses: string[] };
  createdAt: string;
}

export function DomainsTab({ app }: TabProps) {
  const base = `/api/apps/${segment(app.id)}/domains`;
  const domains = useLoad(() => api<{ domains: AppDomain[] }>("GET", base).then(({ domains }) => domains), [app.id]);
  const [error, setError] = useState("");

  const add = async (values: Record<string, string>, form: HTMLFormElement) => {
    await api("POST", base, { domain: values.domain!.trim() });
    form.reset();
    await domains.reload();
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
            Always at <a href={app.url}>{app.url}</a>. Add your own names below and point their DNS at this server.
          </>
        ) : (
          "Add your own names below and point their DNS at this server."
        )}
      </p>
      <Form class="inline" label="Add a domain" submitText="Add domain" onSubmit={add}>
        <Field label="Domain" name="domain" required maxLength={300} placeholder="www.example.com" autocomplete="off" spellcheck={false} />
      </Form>
      <ErrorText message={error || domains.error} />
      {!domains.data && !domains.error && <Spinner />}
      {domains.data && (
        <Table
          caption="The app's domains"
          headings={["Domain", "Certificate", "DNS", "Added", "Actions"]}
          empty="No custom domains yet."
          rowKeys={domains.data.map((domain) => domain.id)}
          rows={domains.data.map((domain) => [
            <a href={domain.url} target="_blank" rel="noopener noreferrer">
              {domain.unicodeDomain}
            </a>,
            <div class="domain-status">
              <StatusBadge status={domain.certificate.status} />
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
            <ActionButton class="danger" label={`Remove ${domain.unicodeDomain}`} run={() => remove(domain)} onError={setError}>
              Remove
            </ActionButton>,
          ])}
        />
      )}
    </>
  );
}

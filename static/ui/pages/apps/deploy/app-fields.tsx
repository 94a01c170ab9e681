// The fields every deploy shares: the app's name, runtime, memory, CPUs, subdomain, and the start
// command and port for an app the detection does not know how to run. An image has no runtime and
// runs its own command unless given one. The API checks them and names the field at fault; no
// pattern here would say more. The health check (./health-check-fields.tsx) and the volumes
// (../../volumes/mount-rows.tsx) close them.
import { Field, SelectField } from "../../../components/form";
import { VolumeFields, volumesValue } from "../../volumes/mount-rows";
import { HealthCheckFields, healthCheckValue } from "./health-check-fields";

export const RUNTIMES: [value: string, text: string][] = [
  ["node", "Node.js"],
  ["bun", "Bun"],
  ["python", "Python"],
];

export function AppFields({ fromImage = false }: { fromImage?: boolean }) {
  return (
    <div class="deploy-fields">
      <Field label="Name" name="name" required maxLength={63} autocomplete="off" spellcheck={false} placeholder="my-site" hint="Lowercase letters, digits and dashes. Deploying an existing name releases a new version of it." />
      {!fromImage && <SelectField label="Runtime" name="runtime" options={RUNTIMES} />}
      <Field label="Memory (MB)" name="memoryMB" type="number" required min={64} max={16384} step={1} defaultValue="256" />
      <Field label="CPUs (optional)" name="cpus" type="number" min={0.1} max={16} step={0.1} placeholder="Platform default" hint="0.1 to 16, e.g. 0.5 for half a core." />
      <Field label="Subdomain (optional)" name="subdomain" autocomplete="off" spellcheck={false} placeholder="Same as the name" />
      {fromImage ? (
        <Field label="Start command (optional)" name="startupCommand" autocomplete="off" spellcheck={false} placeholder="The image's own" hint="Run with /bin/sh -c in the image, which then needs a shell." />
      ) : (
        <Field label="Start command (optional)" name="startupCommand" autocomplete="off" spellcheck={false} placeholder="Detected from the source" hint="Run in the app's folder, for example: python web.py" />
      )}
      <Field label="Port (optional)" name="exposePort" type="number" min={1} max={65535} step={1} placeholder="3000" hint="Given to the app as PORT, where it must listen." />
      <HealthCheckFields />
      <VolumeFields />
    </div>
  );
}

/** The shared fields as the API takes them: numbers as numbers, empty optional fields left out. */
export function appFieldValues(values: Record<string, string>) {
  return {
    name: values.name!.trim(),
    ...(values.runtime ? { runtime: values.runtime } : {}),
    memoryMB: Number(values.memoryMB),
    ...(values.cpus?.trim() ? { cpus: Number(values.cpus) } : {}),
    ...(values.subdomain?.trim() ? { subdomain: values.subdomain.trim() } : {}),
    ...(values.startupCommand?.trim() ? { startupCommand: values.startupCommand.trim() } : {}),
    ...(values.exposePort?.trim() ? { exposePort: Number(values.exposePort) } : {}),
    ...healthCheckValue(values),
    ...volumesValue(values),
  };
}

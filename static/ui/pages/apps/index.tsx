// Apps: `#/apps` the list, `#/apps/new` a deploy, `#/apps/<appId>[/<tab>...]` one app's page.
import { AppPage } from "./app";
import { DeployPage } from "./deploy";
import { AppList } from "./list";

export function AppsSection({ route }: { route: string[] }) {
  if (route[0] === "new") return <DeployPage />;
  if (route[0]) return <AppPage key={route[0]} appId={route[0]} tab={route[1]} rest={route.slice(2)} />;
  return <AppList />;
}

// One app's page and its tabs.
export function AppPage({ appId }: { appId: string; tab?: string; rest: string[] }) {
  return <h1>App {appId}</h1>;
}

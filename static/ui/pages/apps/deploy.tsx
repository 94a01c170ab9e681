// Deploying an app: from a ZIP or from a repository.
export function DeployPage() {
  return <h1>Deploy an app</h1>;
}

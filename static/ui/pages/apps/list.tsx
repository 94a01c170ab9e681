// The workspace's apps with their live status.
export function AppList() {
  return (
    <>
      <h1>Apps</h1>
      <div class="placeholder">
        <p>No apps yet. Deploying and managing apps from the dashboard comes in a later version.</p>
        <p>
          Meanwhile the API can do it: create a key in <a href="#/settings/developer">Settings › Developer</a> and see the <a href="/api/docs">API reference</a>.
        </p>
      </div>
    </>
  );
}

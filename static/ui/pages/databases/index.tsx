// Databases: `#/databases` the list, `#/databases/new`, `#/databases/<databaseId>[/<tab>]`.
export function DatabasesSection(_props: { route: string[] }) {
  return (
    <>
      <h1>Databases</h1>
      <div class="placeholder">
        <p>No databases yet. Provisioning PostgreSQL, MySQL, MongoDB and Redis from the dashboard comes in a later version.</p>
      </div>
    </>
  );
}

#!/bin/bash
# postgres:17 entrypoint contract: first start (empty PGDATA) runs initdb + creates POSTGRES_DB; then exec postgres as postgres.
set -euo pipefail
case "${1:-}" in -*) set -- postgres "$@" ;; esac
if [ "${1:-}" != postgres ]; then exec "$@"; fi

as_pg=()
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" && chown postgres:postgres "$PGDATA" && chmod 700 "$PGDATA"
  as_pg=(setpriv --reuid postgres --regid postgres --init-groups)
fi

if [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD must be set (the data directory is not initialised yet)}"
  user=${POSTGRES_USER:-postgres} db=${POSTGRES_DB:-${POSTGRES_USER:-postgres}}
  pwfile=$(mktemp) && printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  if [ ${#as_pg[@]} -gt 0 ]; then chown postgres "$pwfile"; fi
  # Socket connections are trusted (as in the official image); every TCP connection needs the password.
  "${as_pg[@]}" initdb --username="$user" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 \
    ${POSTGRES_INITDB_ARGS:-} >/dev/null
  rm -f "$pwfile"
  echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
  echo 'host all all all scram-sha-256' >>"$PGDATA/pg_hba.conf"
  if [ "$db" != postgres ]; then
    "${as_pg[@]}" pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
    "${as_pg[@]}" psql -q -v ON_ERROR_STOP=1 -U "$user" -d postgres -v db="$db" <<<'CREATE DATABASE :"db";'
    "${as_pg[@]}" pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  fi
  echo "PostgreSQL init process complete; ready for start up."
fi
exec "${as_pg[@]}" "$@"

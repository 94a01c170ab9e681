#!/bin/bash
# redis:7 entrypoint contract: "-..." or "*.conf" first args run redis-server; chown /data and drop to redis.
set -euo pipefail
first=${1:-}
if [ "${first#-}" != "$first" ] || [ "${first%.conf}" != "$first" ]; then set -- redis-server "$@"; fi

if [ "${1:-}" = redis-server ]; then
  # The official build defaults to protected-mode no; keep an explicit choice from the args or the config file.
  conf=${2:-}
  if ! printf '%s\n' "$@" | grep -q -- '--protected-mode' &&
     ! { [ "${conf%.conf}" != "$conf" ] && grep -qs '^[[:space:]]*protected-mode' "$conf"; }; then
    set -- "$@" --protected-mode no
  fi
  if [ "$(id -u)" = 0 ]; then
    find . \! -user redis -exec chown redis '{}' +
    umask 0077
    exec setpriv --reuid redis --regid redis --init-groups "$@"
  fi
fi
if [ "$(umask)" = 0022 ]; then umask 0077; fi
exec "$@"

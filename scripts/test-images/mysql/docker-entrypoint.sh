#!/bin/bash
# mysql:8.4 entrypoint contract: an empty datadir is initialised (root, MYSQL_DATABASE, MYSQL_USER); then mariadbd runs as mysql.
set -euo pipefail
case "${1:-}" in -*) set -- mysqld "$@" ;; esac
case "${1:-}" in mysqld | mariadbd) shift; set -- mariadbd "$@" ;; *) exec "$@" ;; esac

datadir=/var/lib/mysql
as_mysql=()
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$datadir" /run/mysqld && chown mysql:mysql "$datadir" /run/mysqld
  as_mysql=(setpriv --reuid mysql --regid mysql --init-groups)
fi

str() { local s=${1//\\/\\\\}; printf "'%s'" "${s//\'/\\\'}"; }  # SQL string literal
ident() { printf '`%s`' "${1//\`/\`\`}"; }                       # SQL identifier

if [ ! -d "$datadir/mysql" ]; then
  : "${MYSQL_ROOT_PASSWORD:?MYSQL_ROOT_PASSWORD must be set (the data directory is not initialised yet)}"
  "${as_mysql[@]}" mariadb-install-db --datadir="$datadir" --skip-test-db --auth-root-socket-user="$(id -un)" >/dev/null
  sock=/run/mysqld/init.sock
  "${as_mysql[@]}" "$@" --skip-networking --socket="$sock" &
  pid=$!
  for _ in $(seq 60); do mariadb-admin --socket="$sock" ping >/dev/null 2>&1 && break; sleep 1; done
  # Passwords travel on stdin, never on a command line.
  {
    echo "ALTER USER 'root'@'localhost' IDENTIFIED BY $(str "$MYSQL_ROOT_PASSWORD");"
    echo "CREATE USER 'root'@'%' IDENTIFIED BY $(str "$MYSQL_ROOT_PASSWORD");"
    echo "GRANT ALL ON *.* TO 'root'@'%' WITH GRANT OPTION;"
    if [ -n "${MYSQL_DATABASE:-}" ]; then echo "CREATE DATABASE IF NOT EXISTS $(ident "$MYSQL_DATABASE");"; fi
    if [ -n "${MYSQL_USER:-}" ] && [ -n "${MYSQL_PASSWORD:-}" ]; then
      echo "CREATE USER $(str "$MYSQL_USER")@'%' IDENTIFIED BY $(str "$MYSQL_PASSWORD");"
      if [ -n "${MYSQL_DATABASE:-}" ]; then echo "GRANT ALL ON $(ident "$MYSQL_DATABASE").* TO $(str "$MYSQL_USER")@'%';"; fi
    fi
    echo "SHUTDOWN;"  # root holds no CAP_KILL over the mysql-owned server, so stop it from SQL
  } | mariadb --protocol=socket --socket="$sock" -u "$(id -un)"
  wait "$pid"
  echo "MariaDB init process complete; ready for start up."
fi
exec "${as_mysql[@]}" "$@"

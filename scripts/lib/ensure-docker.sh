# Sourced by install.sh and scripts/test-env.sh: makes sure a Docker engine answers, installing
# Debian's docker.io and starting dockerd (through systemd when it runs, directly otherwise).
ensure_docker() {
  docker info >/dev/null 2>&1 && return 0
  if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
    echo "[setup] installing docker.io (Debian package)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
  fi
  if [ -d /run/systemd/system ]; then
    systemctl enable --now docker >/dev/null 2>&1 || true
  fi
  # Start one unless the default engine's pidfile names a live process (it may still be starting;
  # another engine on its own socket must not fool this check).
  if ! docker info >/dev/null 2>&1 && ! { [ -s /var/run/docker.pid ] && kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; }; then
    echo "[setup] starting dockerd (log: /var/log/dockerd.log)"
    setsid nohup dockerd >/var/log/dockerd.log 2>&1 </dev/null &
  fi
  for _ in $(seq 60); do
    docker info >/dev/null 2>&1 && return 0
    sleep 1
  done
  echo "[setup] dockerd did not answer 'docker info' within 60 s; see /var/log/dockerd.log" >&2
  return 1
}

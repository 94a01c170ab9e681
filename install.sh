#!/usr/bin/env bash
# Installs the platform on a Debian VPS or homelab box, as root. Safe to run twice.
#   bash install.sh             Bun and Docker if missing, build ./platform, install /usr/local/bin/platform
#   bash install.sh --systemd   also write, enable and (re)start the systemd unit `platform`,
#                               with its data in /var/lib/platform
set -euo pipefail
cd "$(dirname "$0")"
with_systemd=false
for arg in "$@"; do
  case "$arg" in
    --systemd) with_systemd=true ;;
    -h|--help) sed -n '2,5p' "$0"; exit 0 ;;
    *) echo "unknown option $arg (see --help)" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "run install.sh as root" >&2; exit 1; }

. scripts/lib/ensure-bun.sh
. scripts/lib/ensure-docker.sh
ensure_bun
ensure_docker
# Repository deploys clone with the git CLI.
command -v git >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq git >/dev/null; }

bun install --frozen-lockfile >/dev/null
bun run build
install -m 0755 platform /usr/local/bin/platform
echo "installed /usr/local/bin/platform ($(/usr/local/bin/platform version))"

data_dir=./data
if $with_systemd; then
  data_dir=/var/lib/platform
  install -d -m 0700 "$data_dir"
  cat > /etc/systemd/system/platform.service <<UNIT
[Unit]
Description=Self-hosted application platform
After=network-online.target docker.service
Wants=network-online.target docker.service

[Service]
ExecStart=/usr/local/bin/platform serve
Environment=PLATFORM_DATA_DIR=$data_dir
EnvironmentFile=-/etc/default/platform
Restart=on-failure
KillSignal=SIGTERM

[Install]
WantedBy=multi-user.target
UNIT
  systemctl daemon-reload
  systemctl enable platform >/dev/null
  systemctl restart platform
  echo "systemd unit 'platform' enabled and started; settings go in /etc/default/platform"
fi

cat <<TEXT

Open http://<this host>:\${PLATFORM_PORT:-3000}/ to create the owner account, or get a first API key
without the dashboard (the dashboard's owner setup then asks for that key):
  PLATFORM_DATA_DIR=$data_dir platform keys create --name admin
TEXT
$with_systemd || echo "Run it with: platform serve   (data in ./data; PLATFORM_DATA_DIR to change)"

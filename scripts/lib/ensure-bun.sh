# Sourced by install.sh and scripts/test.sh: makes sure `bun` is on PATH. Bun ships inside its
# npm package, so npm (from Debian when missing) is all it takes.
ensure_bun() {
  command -v bun >/dev/null 2>&1 && return 0
  if ! command -v npm >/dev/null 2>&1; then
    echo "[setup] installing npm (Debian package)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null
  fi
  echo "[setup] installing Bun (npm install -g bun)"
  npm install -g bun >/dev/null 2>&1
  command -v bun >/dev/null 2>&1 || export PATH="$(npm prefix -g)/bin:$PATH"
  bun --version >/dev/null || { echo "[setup] Bun did not install" >&2; return 1; }
}

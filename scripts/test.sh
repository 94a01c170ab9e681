#!/usr/bin/env bash
# The whole test suite, on a Debian machine with root: README's second command, and all that
# .ci/run runs. Installs what is missing (Bun, Docker and the stand-in images, Chromium), reuses
# what is there, builds ./platform, runs every test, then reruns the binary-level tests against
# the compiled executable.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/ensure-bun.sh
ensure_bun

bash scripts/test-env.sh
if ! command -v chromium >/dev/null 2>&1; then
  echo "[setup] installing Chromium (Debian package) for the dashboard tests"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

bun install --frozen-lockfile
bun run build

log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
bun test --timeout 120000 2>&1 | tee "$log" || status=$?
echo "== again against the compiled ./platform: CLI, migrations, durability, docs, dashboard assets, generated client"
PLATFORM_TEST_BINARY=./platform bun test --timeout 120000 \
  test/integration/smoke.test.ts test/integration/durability.test.ts test/integration/openapi.test.ts \
  test/integration/generated-client.test.ts 2>&1 | tee -a "$log" || status=$?

passed=$(grep -Eo '^ *[0-9]+ pass$' "$log" | awk '{n += $1} END {print n + 0}')
failed=$(grep -Eo '^ *[0-9]+ fail$' "$log" | awk '{n += $1} END {print n + 0}')
echo "tests: $passed passed, $failed failed"
if [ "$passed" -eq 0 ]; then echo "no test ran" >&2; exit 1; fi
exit "$status"

#!/usr/bin/env bash
# The set-up of the browser tests of the pages (cmd/ticketrush pages_*_test.go), idempotent and quick
# when everything is there:
# - Debian's chromium, which they drive headless, and fonts-noto-cjk, without which headless chromium
#   draws Hangul as empty boxes (the Korean screenshots);
# - node and npm (Debian's), then `npm ci` in web/: axe-core at the version of web/package-lock.json, the
#   accessibility audit the tests inject into every page state.
# As root it installs with apt-get (scripts/install.sh); otherwise it says what to run.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
web="$here/../web"

missing=()
browser=""
for b in chromium chromium-browser google-chrome; do command -v "$b" >/dev/null && { browser=$b; break; }; done
[ -n "$browser" ] || missing+=(chromium)
dpkg-query -W -f='${Status}' fonts-noto-cjk 2>/dev/null | grep -q 'ok installed' || missing+=(fonts-noto-cjk)
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if [ "${#missing[@]}" -gt 0 ]; then
  "$here/install.sh" "${missing[@]}"
fi
command -v chromium >/dev/null || command -v chromium-browser >/dev/null || command -v google-chrome >/dev/null

# npm ci when axe-core is missing or the lock file changed since the last install.
stamp="$web/node_modules/.package-lock.json"
if [ ! -f "$web/node_modules/axe-core/axe.min.js" ] || [ "$web/package-lock.json" -nt "$stamp" ]; then
  echo "installing axe-core with npm ci in web/" >&2
  (cd "$web" && npm ci --no-audit --no-fund --silent)
fi
test -f "$web/node_modules/axe-core/axe.min.js"

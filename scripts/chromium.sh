#!/usr/bin/env bash
# Installs Debian's chromium when it is missing: the browser tests of the pages (cmd/ticketrush
# pages_e2e_test.go) drive it headless. As root it installs with apt-get; otherwise it says how.
set -euo pipefail
for b in chromium chromium-browser google-chrome; do command -v "$b" >/dev/null && exit 0; done
"$(dirname "$0")/install.sh" chromium
command -v chromium >/dev/null

#!/usr/bin/env bash
# Installs Debian's chromium when it is missing: the browser tests of the pages (cmd/ticketrush
# pages_e2e_test.go) drive it headless. As root it installs with apt-get; otherwise it says how.
set -euo pipefail
for b in chromium chromium-browser google-chrome; do command -v "$b" >/dev/null && exit 0; done
if [ "$(id -u)" -ne 0 ]; then
  echo "missing chromium (the browser tests need it): sudo apt-get install -y chromium" >&2
  exit 1
fi
echo "installing chromium with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -qq chromium >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }
command -v chromium >/dev/null

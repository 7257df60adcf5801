#!/usr/bin/env bash
# Installs Debian packages with apt-get: the one place the set-up does it (scripts/services.sh,
# scripts/cluster.sh, scripts/chromium.sh and the Makefile's checks call it). It refreshes the package
# lists first (a fresh machine may have none, or old ones), waits for another apt-get to finish instead of
# failing on its lock, and says what to run when it cannot install (not root, no apt-get).
# usage: scripts/install.sh PACKAGE...
set -euo pipefail
[ "$#" -gt 0 ] || { echo "usage: scripts/install.sh PACKAGE..." >&2; exit 2; }
if [ "$(id -u)" -ne 0 ]; then
  echo "missing: $*. Install with: sudo apt-get update && sudo apt-get install -y $*" >&2
  exit 1
fi
command -v apt-get >/dev/null || { echo "missing: $*, and there is no apt-get here: install them by hand" >&2; exit 1; }
echo "installing $* with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
lock=(-o DPkg::Lock::Timeout=600)
apt-get "${lock[@]}" update -qq
apt-get "${lock[@]}" install -y -qq "$@" >/dev/null

#!/usr/bin/env bash
# System packages the tests use that pip and npm cannot bring: headless Chromium (viewer and
# capture-page tests) and nats-server (relay cluster tests), both from Debian.
# Installs them where it can (as root, or through password-less sudo); otherwise prints the
# exact command and goes on (the tests then say by name what is missing).
# --required: a missing package that cannot be installed is an error (CI).
set -euo pipefail
required=0; [ "${1:-}" = "--required" ] && required=1
missing=()
command -v chromium >/dev/null || [ -x /usr/bin/chromium ] || missing+=(chromium)
command -v nats-server >/dev/null || [ -x /usr/sbin/nats-server ] || [ -x /usr/bin/nats-server ] || missing+=(nats-server)
[ ${#missing[@]} -eq 0 ] && exit 0
cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if ! command -v apt-get >/dev/null; then
  echo "system-deps: missing ${missing[*]} and no apt-get here: install them with your package manager" >&2
  exit $required
fi
if [ "$(id -u)" -eq 0 ]; then SUDO=""; elif sudo -n true 2>/dev/null; then SUDO="sudo"; else
  echo "system-deps: missing ${missing[*]}; install them with: sudo apt-get update && sudo $cmd" >&2
  exit $required
fi
echo "system-deps: installing ${missing[*]} (Debian packages)" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"

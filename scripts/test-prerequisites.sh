#!/usr/bin/env bash
# The two programs `npm test` needs from the system rather than npm: Debian's Chromium at
# /usr/bin/chromium (the explorer's end-to-end tests drive it through playwright-core, which downloads
# no browser) and python3 with venv and ensurepip (the Python client's tests install it into a fresh
# venv). When one is missing and this runs as root on a machine with apt-get, it installs the Debian
# packages, saying so; otherwise it stops before the suite, naming what to install. Quiet when both are
# there. Run first by `npm test` and by .ci/run.
set -euo pipefail

CHROMIUM=/usr/bin/chromium
missing=()
needs=()
if [ ! -x "$CHROMIUM" ]; then
  missing+=(chromium)
  needs+=("the explorer's end-to-end tests drive $CHROMIUM")
fi
if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
  missing+=(python3 python3-venv)
  needs+=("the Python client's tests make a venv")
fi
[ ${#missing[@]} -eq 0 ] && exit 0

reason=$(printf '%s; ' "${needs[@]}")
reason=${reason%; }
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
  echo "npm test needs ${missing[*]} from the system ($reason)." >&2
  echo "On Debian, as root: apt-get update && apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "installing ${missing[*]} from Debian's packages ($reason)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${missing[@]}" >/dev/null
[ -x "$CHROMIUM" ] || { echo "FATAL: $CHROMIUM is still missing after installing chromium" >&2; exit 1; }
python3 -c 'import ensurepip, venv' || { echo "FATAL: python3 still has no venv and ensurepip" >&2; exit 1; }

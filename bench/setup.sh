#!/bin/sh
# bench/setup.sh — installs the Debian packages only bench/ needs (OpenBLAS for the
# hand-written C baseline, PyTorch for the eager baseline). Idempotent: checks each
# package with dpkg-query and runs apt-get only for the missing ones. The main
# build and CI never need these (scripts/setup.sh does not install them).
set -eu
PKGS="libopenblas-dev python3-torch python3-numpy python3-matplotlib cmake gcc"
missing=""
for p in $PKGS; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
[ -z "$missing" ] && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "bench/setup.sh: installing$missing"
$SUDO apt-get update -qq
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing

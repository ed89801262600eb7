#!/usr/bin/env bash
# Installs what ctx needs to build and test on Debian 12. Idempotent: when every
# package is already there it only checks (well under a second) and returns.
set -euo pipefail

PKGS=(cmake ninja-build pkg-config re2c bison check llvm-19-dev clang-19
      libclang-rt-19-dev libffi-dev libedit-dev libjansson-dev python3
      python3-numpy python3-torch python3-matplotlib vim emacs-nox tmux binutils libzstd-dev)
# binutils: ld (ctx build links through cc), nm and objdump (aot_embed); python3-matplotlib: plot_profile;
# libzstd-dev: LLVM's static libraries need it (codegen/CMakeLists.txt: CTX_LLVM_STATIC)
# A machine may carry its own Node.js with npm bundled; Debian's npm would clash.
command -v npm >/dev/null 2>&1 || PKGS+=(nodejs npm)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Node packages for the VS Code grammar tests (pinned by the committed lockfile).
here=$(cd "$(dirname "$0")/.." && pwd)
if [ -f "$here/editors/vscode/test/package-lock.json" ] &&
   [ ! -d "$here/editors/vscode/test/node_modules" ]; then
  echo "setup: npm ci in editors/vscode/test"
  (cd "$here/editors/vscode/test" && npm ci --no-audit --no-fund --loglevel=error)
fi

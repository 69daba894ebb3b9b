#!/usr/bin/env bash
# Installs ripgrep (Debian's package) so the ripgrep tool's real-rg path is tested; the tool's
# pure-Python fallback covers machines without it, so a missing apt is not an error.
# Idempotent: does nothing when `rg` is already on PATH.
set -euo pipefail
if command -v rg >/dev/null 2>&1; then
    echo "install-tools: rg already present ($(rg --version | head -n1))"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-tools: apt-get unavailable; ripgrep tests will use the Python fallback only"
    exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO="sudo -n"
    else
        echo "install-tools: not root and no passwordless sudo; skipping ripgrep install"
        exit 0
    fi
fi
export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get update -qq || \
   ! $SUDO apt-get install -y -qq --no-install-recommends ripgrep; then
    echo "install-tools: apt-get could not install ripgrep; the Python fallback still works"
    exit 0
fi
echo "install-tools: installed $(rg --version | head -n1)"

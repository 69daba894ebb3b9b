#!/usr/bin/env bash
# Installs the real ACP client the ACP tests drive `jucode acp` with: the npm package acpx,
# pinned, into .ci-cache/acp (project-local; nothing global). Idempotent: skipped when present.
# acpx declares node >= 22 but its one-shot `exec` path runs on node 20 as well.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="$ROOT/.ci-cache/acp"
VERSION="0.19.1"
mkdir -p "$DIR"
if [ ! -f "$DIR/node_modules/acpx/dist/cli.js" ] || \
   ! grep -q "\"version\": \"$VERSION\"" "$DIR/node_modules/acpx/package.json"; then
    [ -f "$DIR/package.json" ] || echo '{"name":"jucode-acp-ci","private":true}' > "$DIR/package.json"
    npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error "acpx@$VERSION"
fi
echo "install-acp: ok"

#!/usr/bin/env bash
# Installs the real MCP servers the MCP tests talk to, into project-local dirs only:
#   - @modelcontextprotocol/server-everything (npm)  -> .ci-cache/npm
#   - mcp-server-time (PyPI, in its OWN venv so its `mcp` SDK never touches the engine venv)
#                                                    -> .ci-cache/mcp-time-venv
# Idempotent: each step is skipped when its binary already exists.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="$ROOT/.ci-cache"
mkdir -p "$CACHE/npm"

if [ ! -x "$CACHE/npm/node_modules/.bin/mcp-server-everything" ]; then
    npm install --prefix "$CACHE/npm" --no-audit --no-fund --loglevel=error \
        @modelcontextprotocol/server-everything
fi

VENV="$CACHE/mcp-time-venv"
if [ ! -x "$VENV/bin/mcp-server-time" ]; then
    PY="$(command -v python3)"
    "$PY" -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check mcp-server-time
fi
echo "install-mcp: ok"

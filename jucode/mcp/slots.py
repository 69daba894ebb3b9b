"""Per-server bookkeeping shared by the manager and its reconfiguration half.

A module of its own so :mod:`.manager` (connections, tools, prompts) and :mod:`.reconfigure`
(set/remove/toggle/reload and following config.json) can both use it without a cycle.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

from .config import McpServerConfig

DISABLED, CONNECTING, CONNECTED, FAILED = "disabled", "connecting", "connected", "failed"
CHANGED_MARKER = "_mcp_changed"


@dataclass
class Slot:
    """One configured server. ``generation`` grows whenever a connect attempt is superseded,
    so a late result of an old attempt is recognised and dropped."""

    config: McpServerConfig
    state: str = DISABLED
    error: str = ""
    client: Optional[object] = None          # McpClient while connecting/connected
    generation: int = 0
    refreshing: bool = False


def same_but_enabled(a: McpServerConfig, b: McpServerConfig) -> bool:
    """True when two entries differ at most in ``enabled`` (a toggle, not a restart)."""
    return dataclasses.replace(a, enabled=b.enabled) == b

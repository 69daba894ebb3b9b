"""The two synthetic resource tools: ``mcp__<s>__list_resources`` and ``…__read_resource``.

Why the rules: the model may only read what the server listed (no probing of arbitrary
URIs), ``file://`` resources must stay inside the workspace, and only text up to 256 KiB is
returned, so a resource can't flood the context or smuggle binary data.
"""

from __future__ import annotations

import os
import threading
from typing import Optional
from urllib.parse import unquote, urlparse

from .client import McpClient, McpError
from .render import MAX_RESOURCE_BYTES


def _refresh(client: McpClient) -> None:
    if "resources" in client.dirty:
        try:
            client.refresh_dirty()
        except McpError:
            pass                                   # keep the old list


def list_resources_result(client: McpClient) -> dict:
    _refresh(client)
    return {"resources": [{"uri": r.get("uri", ""), "name": r.get("name", ""),
                           "description": r.get("description", ""),
                           "mimeType": r.get("mimeType", "")} for r in client.resources]}


def _inside(path: str, root: str) -> bool:
    path, root = os.path.realpath(path), os.path.realpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def read_resource_result(client: McpClient, uri, cwd: str,
                         interrupt: Optional[threading.Event] = None) -> dict:
    if not isinstance(uri, str) or not uri:
        return {"error": "missing uri"}
    _refresh(client)
    if uri not in {r.get("uri") for r in client.resources}:
        return {"error": f"resource {uri} is not listed by MCP server {client.name}; "
                         f"call mcp__{client.name}__list_resources first"}
    if uri.startswith("file://"):
        path = unquote(urlparse(uri).path)
        if not _inside(path, cwd):
            return {"error": f"resource {uri} is outside the workspace"}
    result = client.read_resource(uri, interrupt=interrupt)
    contents = [c for c in (result.get("contents") or []) if isinstance(c, dict)]
    texts = [c for c in contents if isinstance(c.get("text"), str)]
    if not texts:
        if contents:
            return {"error": f"resource {uri} is not text "
                             f"({contents[0].get('mimeType') or 'binary'}); only text is supported"}
        return {"error": f"resource {uri} has no contents"}
    text = "\n".join(c["text"] for c in texts)
    size = len(text.encode("utf-8"))
    if size > MAX_RESOURCE_BYTES:
        return {"error": f"resource {uri} is too large ({size} bytes; limit {MAX_RESOURCE_BYTES})"}
    return {"uri": uri, "mimeType": texts[0].get("mimeType", ""), "text": text}

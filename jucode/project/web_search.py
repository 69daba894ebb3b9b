"""``web_search``: offered only when something can actually answer it.

Two backends, checked in this order:

1. A search endpoint named in config.json (``web_search_url``). The tool POSTs
   ``{"query", "max_results", "freshness"?}`` as JSON and returns the endpoint's JSON (expected:
   ``{"results": [...]}``). ``web_search_api_key_env`` optionally names an environment variable
   whose value is sent as a Bearer token. Works in every session and with every wire API.
2. The provider's hosted search, in chat sessions on the Responses wire API: the request then
   carries a hosted ``{"type": "web_search"}`` tool and the provider runs the search itself (no
   function call ever reaches our tool runner).

Otherwise the tool is not offered at all (a tool that can only fail wastes the model's turns) and
``/doctor`` explains why via :func:`web_search_status`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

from ..tools.base import GATE_WEB, ToolContext, ToolSpec

QUERY_MAX_CHARS = 400
FRESHNESS = ("day", "week", "month", "year")
ERR_UNAVAILABLE = "web_search is not available in this session"
ERR_QUERY = "missing query"
ERR_MAX_RESULTS = "max_results must be an integer from 1 to 10"

PARAMETERS = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": f"What to search for (at most {QUERY_MAX_CHARS} characters)."},
        "max_results": {"type": "integer", "description": "1-10, default 10"},
        "freshness": {"type": "string", "enum": list(FRESHNESS)},
    },
    "required": ["query"],
}


class HostedToolSpec(ToolSpec):
    """A provider-side tool: its wire definition is the hosted type, not a function."""

    def definition(self) -> dict:
        return {"type": "web_search"}


def _hosted_run(args: dict, ctx: ToolContext) -> dict:
    # The provider executes hosted search; a function call by this name means it did not.
    return {"error": ERR_UNAVAILABLE}


@dataclass
class WebSearchStatus:
    spec: Optional[ToolSpec]
    line: str            # the /doctor line


def _protocol(config: dict, model: str) -> str:
    try:
        from ..llm.catalog import resolve_protocol
        return resolve_protocol(config, model)
    except Exception:  # catalog missing or broken config: no hosted search then
        return (config.get("protocol") or "unknown").strip() or "unknown"


def web_search_status(config: dict, model: str, chat: bool) -> WebSearchStatus:
    url = (config.get("web_search_url") or "").strip() if isinstance(config.get("web_search_url"), str) else ""
    if url:
        if not url.startswith(("http://", "https://")):
            return WebSearchStatus(None, f"web_search: off (web_search_url must be an http(s) URL: {url})")
        spec = ToolSpec(name="web_search", description="Search the web; returns result titles, URLs and snippets.",
                        parameters=PARAMETERS, run=lambda a, c: run_endpoint_search(url, config, a, c),
                        gate=GATE_WEB, parallel_safe=True)
        return WebSearchStatus(spec, f"web_search: search endpoint {url}")
    proto = _protocol(config, model)
    if chat and proto == "responses":
        spec = HostedToolSpec(name="web_search", description="Hosted web search (run by the provider).",
                              parameters={}, run=_hosted_run, gate=GATE_WEB)
        return WebSearchStatus(spec, "web_search: the provider's hosted search (Responses API)")
    if proto != "responses":
        why = f"the {proto} wire API has no hosted search"
    else:
        why = "hosted search is only used in chat sessions"
    return WebSearchStatus(None, f"web_search: not offered ({why} and web_search_url is not set in config.json)")


def _check_args(args: dict) -> tuple[Optional[dict], Optional[str]]:
    query = args.get("query")
    if not isinstance(query, str) or not query.strip():
        return None, ERR_QUERY
    body: dict = {"query": query.strip()[:QUERY_MAX_CHARS]}
    n = args.get("max_results", 10)
    if isinstance(n, float) and n.is_integer():
        n = int(n)
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 10:
        return None, ERR_MAX_RESULTS
    body["max_results"] = n
    fresh = args.get("freshness")
    if isinstance(fresh, str) and fresh in FRESHNESS:
        body["freshness"] = fresh
    return body, None


def run_endpoint_search(url: str, config: dict, args: dict, ctx: ToolContext) -> dict:
    body, err = _check_args(args)
    if err:
        return {"error": err}
    import requests  # lazy: never on the startup path
    headers = {"Content-Type": "application/json"}
    env = config.get("web_search_api_key_env")
    if isinstance(env, str) and os.environ.get(env):
        headers["Authorization"] = f"Bearer {os.environ[env]}"
    try:
        r = requests.post(url, json=body, headers=headers, timeout=(10, 60), allow_redirects=False)
    except requests.RequestException as e:
        return {"error": f"could not reach the search endpoint: {e}"}
    if r.status_code >= 400:
        return {"error": f"search endpoint HTTP {r.status_code}: {r.text[:500]}"}
    try:
        data = r.json()
    except ValueError as e:
        return {"error": f"invalid search response: {e}"}
    return data if isinstance(data, dict) else {"results": data}

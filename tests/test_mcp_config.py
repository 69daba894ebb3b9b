"""MCP config validation (upstream's exact texts), mcp_* op edits, and result rendering."""

import pytest

from jucode.mcp.config import (McpConfigError, apply_mcp_op, parse_server, parse_servers)
from jucode.mcp.render import (parse_prompt_args, prompt_args_label, render_prompt,
                               render_tool_result)


def err(entry):
    with pytest.raises(McpConfigError) as info:
        parse_server(entry)
    return str(info.value)


def test_valid_entries_and_defaults():
    cfg = parse_server({"name": "fs-1_a", "command": "srv"})
    assert (cfg.transport, cfg.enabled, cfg.timeout_seconds, cfg.args, cfg.env) == (
        "stdio", True, 60, [], {})
    assert parse_server({"name": "a", "transport": "", "command": "x"}).transport == "stdio"
    assert parse_server({"name": "a", "command": "x", "timeout_seconds": 0}).timeout_seconds == 1
    assert parse_server({"name": "a", "command": "x", "timeout_seconds": 99999}).timeout_seconds == 3600
    http = parse_server({"name": "h", "transport": "http", "url": "http://127.0.0.1/mcp",
                         "oauth": {"client_id": "c", "token_url": "http://t"}})
    assert http.to_dict()["oauth"] == {"client_id": "c", "token_url": "http://t"}


def test_exact_error_texts():
    assert err({"name": "bad name", "command": "x"}) == (
        "invalid MCP server name 'bad name': use letters, digits, '_' or '-'")
    assert err({"name": "", "command": "x"}) == (
        "invalid MCP server name '': use letters, digits, '_' or '-'")
    assert err({"name": "s"}) == "MCP server s: stdio transport requires command"
    assert err({"name": "s", "transport": "http"}) == "MCP server s: http transport requires url"
    assert err({"name": "s", "command": "x", "oauth": {"client_id": "c", "token_url": "t"}}) == (
        "MCP server s: oauth requires http transport")
    assert err({"name": "s", "transport": "http", "url": "u", "oauth": {"client_id": "c"}}) == (
        "MCP oauth client_id and token_url must be set together")
    assert err({"name": "s", "transport": "ws", "url": "u"}) == (
        "unknown MCP transport 'ws': use stdio or http")
    assert err({"name": "s", "command": "x", "args": "a b"}) == (
        "MCP server s: args must be an array of strings")


def test_parse_servers_skips_bad_and_duplicates():
    servers, errors = parse_servers([{"name": "a", "command": "1"}, {"name": "a", "command": "2"},
                                     {"name": "b"}, {"name": "c", "command": "3"}])
    assert [(s.name, s.command) for s in servers] == [("a", "1"), ("c", "3")]
    assert errors == ["MCP server b: stdio transport requires command"]


def test_apply_mcp_op_validation_and_edits():
    config = {"model": "m", "mcp_servers": [{"name": "a", "command": "x", "custom": 1}]}
    assert apply_mcp_op(config, {"op": "mcp_set"}).error == "mcp_set requires a server object"
    assert apply_mcp_op(config, {"op": "mcp_set", "server": {"name": "?"}}).error.startswith(
        "invalid MCP server name '?'")
    assert apply_mcp_op(config, {"op": "mcp_remove"}).error == "mcp_remove requires name"
    assert apply_mcp_op(config, {"op": "mcp_remove", "name": "z"}).error == "unknown MCP server: z"
    assert apply_mcp_op(config, {"op": "mcp_toggle", "name": "a"}).error == (
        "mcp_toggle requires name and enabled")
    assert apply_mcp_op(config, {"op": "mcp_toggle", "name": "z", "enabled": True}).error == (
        "unknown MCP server: z")

    res = apply_mcp_op(config, {"op": "mcp_set", "server": {"name": "a", "command": "y", "extra": 2}})
    assert res.action == "set" and res.server.command == "y"
    assert res.config["mcp_servers"] == [{"name": "a", "transport": "stdio", "command": "y",
                                          "args": [], "env": {}, "enabled": True,
                                          "timeout_seconds": 60, "extra": 2}]
    assert config["mcp_servers"][0]["command"] == "x"           # input untouched
    res = apply_mcp_op(config, {"op": "mcp_set", "server": {"name": "b", "command": "z"}})
    assert [e["name"] for e in res.config["mcp_servers"]] == ["a", "b"]
    res = apply_mcp_op(config, {"op": "mcp_toggle", "name": "a", "enabled": False})
    assert res.config["mcp_servers"][0] == {"name": "a", "command": "x", "custom": 1, "enabled": False}
    assert res.enabled is False and res.config["model"] == "m"
    res = apply_mcp_op(config, {"op": "mcp_remove", "name": "a"})
    assert res.config["mcp_servers"] == [] and res.action == "remove"


def test_render_tool_result():
    assert render_tool_result({"content": [{"type": "text", "text": "a"},
                                           {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
                                           {"type": "resource", "resource": {"uri": "u", "text": "t"}},
                                           {"type": "resource_link", "uri": "l"}]}) == (
        "a\n[audio audio/wav (4 base64 bytes, not shown)]\n[resource u]\nt\n[resource link l]", False)
    assert render_tool_result({"content": [], "structuredContent": {"k": [1]}}) == ('{"k": [1]}', False)
    assert render_tool_result({}) == ("(no content)", False)
    assert render_tool_result({"content": [{"type": "text", "text": "x"}], "isError": True}) == ("x", True)


def test_prompt_helpers():
    assert prompt_args_label({"name": "p"}) == ""
    assert prompt_args_label({"arguments": [{"name": "a"}]}) == "[JSON arguments]"
    assert prompt_args_label({"arguments": [{"name": "a", "required": True}, {"name": "b"},
                                            {"name": "c", "required": True}]}) == "<JSON: a, c>"
    prompt = {"arguments": [{"name": "a", "required": True}]}
    assert parse_prompt_args(prompt, ' {"a": "1", "n": 2, "f": true} ') == {"a": "1", "n": "2", "f": "true"}
    with pytest.raises(ValueError, match="missing required prompt arguments: a"):
        parse_prompt_args(prompt, "{}")
    with pytest.raises(ValueError, match="must be a string"):
        parse_prompt_args(prompt, '{"a": [1]}')
    text = render_prompt({"messages": [{"role": "user", "content": {"type": "text", "text": "q"}},
                                       {"role": "assistant", "content": [{"type": "text", "text": "r"}]}]})
    assert text == "user:\nq\n\nassistant:\nr"
    big = render_prompt({"messages": [{"role": "user", "content": {"type": "text", "text": "x" * 300_000}}]})
    assert len(big.encode()) == 256 * 1024


def test_session_servers_join_config_servers_and_win_on_name():
    from types import SimpleNamespace

    from jucode.mcp.host import McpHost

    host = SimpleNamespace(_session_servers=[{"name": "b", "command": "editor-b"}, {"name": "c", "url": "http://x"}])
    merged = McpHost._with_session_servers(host, [{"name": "a", "command": "cfg-a"}, {"name": "b", "command": "cfg-b"}])
    assert merged == [{"name": "a", "command": "cfg-a"}, {"name": "b", "command": "editor-b"},
                      {"name": "c", "url": "http://x"}]
    assert McpHost._with_session_servers(SimpleNamespace(_session_servers=[]), None) == []

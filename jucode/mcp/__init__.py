"""MCP (Model Context Protocol) client side: config entries, transports, clients, manager.

Only stdlib is imported here (``requests`` is imported lazily by the HTTP transport), so
importing this package on the startup path stays cheap.
"""

from .client import McpClient, McpError, McpTimeout
from .config import McpConfigError, McpServerConfig, apply_mcp_op, parse_server, parse_servers
from .manager import CHANGED_MARKER, McpManager

__all__ = ["McpManager", "McpClient", "McpError", "McpTimeout", "McpConfigError",
           "McpServerConfig", "apply_mcp_op", "parse_server", "parse_servers", "CHANGED_MARKER"]

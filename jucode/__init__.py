"""jucode: a threaded, synchronous coding-agent engine speaking the serve protocol (v2)."""

__version__ = "0.3.0"
PROTOCOL_VERSION = 2

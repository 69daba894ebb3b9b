"""Builtin tools. The registry (jucode.tools.registry) is the one list of them."""

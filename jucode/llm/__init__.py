"""The model layer: wire APIs (Responses, Chat, Anthropic), retries, catalog and provider factory.

Nothing is imported here so that importing a submodule stays cheap on the startup path.
"""

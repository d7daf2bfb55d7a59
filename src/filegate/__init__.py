"""filegate: Kimi CLI's file tools as an MCP server."""

__version__ = "0.1.0"

"""The MCP face of filegate: the only package that imports fastmcp or mcp."""

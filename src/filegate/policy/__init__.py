"""The rules: which paths may be touched and how, what a file is. Pure, MCP-free."""

"""The six tools, MCP-free: validated params + a ToolEnv in, an Outcome out."""

"""Import and export: versioned JSON Lines, the Go Yul'lu database, the MCP memory server's JSONL,
the assistants' own memory files, and AGENTS.md."""

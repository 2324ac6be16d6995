"""Cross-app utilities, no Django app of their own: config, env, paths, errors and api_errors,
database and postgres (the embedded server), locks (advisory), metrics (instruments), mcp (tool
plumbing), wire (wire-shape markers). Imports nothing from the packages above it (make lint)."""

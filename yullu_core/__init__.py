"""Cross-app utilities: config, environment, paths, errors, database and embedded Postgres."""

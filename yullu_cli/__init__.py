"""The `yullu` command: argument parsing (main), the supervisor, installer, hooks, benchmarks."""

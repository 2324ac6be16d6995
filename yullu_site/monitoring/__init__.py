"""Is it working: the one health model (health.py: `GET /api/status`, `yullu doctor`, the dashboard and
the `yullu serve` banner), Prometheus metrics (`GET /metrics` and the request middleware: metrics.py),
their views (views.py) and JSON log lines (logjson.py)."""

"""Embedders behind one interface (local ONNX model, remote APIs), batching and caches, the
pgvector indexes, and the backfill of missing vectors. Knows neither search nor the write side."""

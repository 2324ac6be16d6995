"""The read side: retrieval (queries, candidates, gates, bm25, expansion, feedback, rerank), the
merged project + user scope search, the context block, the recall log, listings and stats.
Imports nothing here: the prompt hook imports `trivial` without Django."""

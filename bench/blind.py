"""The codebase sets kept blind for issue 34 (bench/data/codebase_other_NAME.json): written by engineers who saw no
other set and no retrieval code, measured as aggregates only, never read by a study or a tuning tool. One list, so
each tool refuses the same sets (AM and AN joined in round twenty-one, AO and AP in round twenty-three, AQ and AR in
round twenty-five, AS and AT in round twenty-six)."""

BLIND = frozenset(f"other_a{c}" for c in "cdefghijmnopqrst")

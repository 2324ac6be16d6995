"""Code anchors (docs/contract.md §12): memories that cite code, pinned to a commit and checked against HEAD.

refs (anchor strings, path safety, detection in content) → symbols (where a symbol's text is) →
repo (git through pygit2) → pins (pin and check one anchor; pure, no database) → the database
side: store (attach, wire form), checks (check against HEAD with a per-HEAD cache, ranking),
stale (the Stale queue, re-pin, diffs).
"""

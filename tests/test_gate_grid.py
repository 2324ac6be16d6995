"""bench/gate_grid.py (issue 34, round twenty-five) refuses a dump of a blind set: the sets in bench/blind.py are
measured as aggregates only, never replayed by a tuning tool."""

import json
from pathlib import Path

import pytest

from bench import gate_grid
from bench.blind import BLIND


def test_the_grid_refuses_a_dump_of_a_blind_set(tmp_path: Path) -> None:
    blind = sorted(BLIND)[0]
    dump = tmp_path / "dump.json"
    row = {"kind": "unrelated", "q": "what is htmx", "split": blind, "answers": [], "cands": []}
    dump.write_text(json.dumps({"embedder": "local:all-MiniLM-L6-v2", "rows": [row]}))
    with pytest.raises(SystemExit, match="refused"):
        gate_grid.main([str(dump)])

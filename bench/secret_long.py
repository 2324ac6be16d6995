"""What the secret scanner costs on long memories, and what it refuses in this repository's own text.

Run: .venv/bin/python -m bench.secret_long [--site-packages]

The repository's Markdown and Python files (its docs and code: ordinary technical text, plus the test
and bench files that hold fake secrets on purpose) cut into paragraphs (how many are refused) and into
8,000-character chunks (the content limit): CPU per `find_secret` call on the first 300 chunks, median,
p90 and max. CPU time, not wall time: the machine is shared. `--site-packages` also counts the refused
paragraphs among 60,000 of the installed packages' Python source (2,500 files in a seeded order): code
and docstrings nobody wrote for this scanner.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sysconfig
import time
from pathlib import Path

from memories.secrets import find_secret

ROOT = Path(__file__).resolve().parents[1]
SKIP = (".venv", ".test-home", "node_modules", ".git")


def texts() -> list[str]:
    files = [p for ext in ("*.md", "*.py") for p in ROOT.rglob(ext) if not set(SKIP) & set(p.parts)]
    return [p.read_text("utf-8", errors="replace") for p in sorted(files)]


def site_paragraphs() -> list[str]:
    files = sorted(Path(sysconfig.get_paths()["purelib"]).rglob("*.py"))
    random.Random(1).shuffle(files)
    paragraphs: list[str] = []
    for path in files[:2500]:
        try:
            text = path.read_text("utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        paragraphs += [p for p in text.split("\n\n") if 20 < len(p) < 3000]
    return paragraphs[:60000]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--site-packages", action="store_true", help="also the installed packages' source")
    args = parser.parse_args()
    find_secret("warm up: load the rules and the confusables table (а)")
    paragraphs = [p for text in texts() for p in text.split("\n\n") if p.strip()]
    chunks = [text[i : i + 8000] for text in texts() for i in range(0, len(text) - 7999, 8000)][:300]
    refused = sum(1 for p in paragraphs if find_secret(p))
    costs = []
    for chunk in chunks:
        start = time.thread_time_ns()
        find_secret(chunk + " ")  # (a text not seen before: the verdict cache must not answer)
        costs.append((time.thread_time_ns() - start) / 1e6)
    costs.sort()
    print(f"{len(paragraphs)} paragraphs of this repository: refused {refused}")
    print(
        f"CPU per find_secret on {len(costs)} chunks of 8,000 characters: median {statistics.median(costs):.1f} ms, "
        f"p90 {costs[int(0.9 * (len(costs) - 1))]:.1f} ms, max {costs[-1]:.1f} ms"
    )
    if args.site_packages:
        site = site_paragraphs()
        print(f"{len(site)} paragraphs of installed packages' source: refused {sum(1 for p in site if find_secret(p))}")


if __name__ == "__main__":
    main()

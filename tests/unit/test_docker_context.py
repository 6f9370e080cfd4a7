"""The Docker build context holds no private signing key: not the keystore `make demo` makes next to the shipped
team files, and no `<robot>.key` anywhere else in the tree (tests/faults/test_signing.py covers the keys themselves)."""

from __future__ import annotations

import re
from pathlib import Path

from coteam.home.signing import init_keystore

ROOT = Path(__file__).resolve().parents[2]


def _pattern(line: str) -> re.Pattern[str]:
    """A .dockerignore line as Docker matches it: against the path from the context's root, ``**`` any number of
    folders, ``*`` and ``?`` within one name; a folder that matches takes everything in it along."""
    out = ""
    for part in re.split(r"(\*\*/|\*\*|\*|\?)", line.strip("/")):
        out += {"**/": "(?:.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}.get(part, re.escape(part))
    return re.compile(out + "(?:/.*)?")


def _ignored(path: str) -> bool:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    patterns = [_pattern(line) for line in lines if line.strip() and not line.startswith("#")]
    return any(p.fullmatch(path) for p in patterns)


def test_the_build_context_holds_no_private_key(tmp_path: Path) -> None:
    init_keystore(tmp_path / "keys", ["alice", "bob"])  # what `make demo` writes into config/keys/
    for key in sorted((tmp_path / "keys").iterdir()):
        assert _ignored(f"config/keys/{key.name}"), key.name
        assert _ignored(f"deploy/site/keys/{key.name}") or not key.name.endswith(".key"), key.name
    assert not _ignored("config/team_sim.yaml") and not _ignored("src/coteam/home/signing.py")
    for path in ROOT.rglob("*"):
        if path.is_file() and ".venv" not in path.parts and ".git" not in path.parts:
            rel = path.relative_to(ROOT).as_posix()
            head = path.read_bytes()[:64] if path.stat().st_size < 10_000 else b""
            if b"PRIVATE KEY" in head or path.suffix == ".key":
                assert _ignored(rel), f"{rel} would go into the image"

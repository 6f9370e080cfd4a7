"""What every bench script shares: its command line (``--out FILE`` splices its section into a markdown file, else
it prints it), the splice itself (a section runs from its ``## `` title to the next one; re-running replaces it, leaving
the rest of the file as it was) and the machine a figure was measured on."""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
from collections.abc import Callable
from pathlib import Path


def machine() -> str:
    cpu = ""
    with contextlib.suppress(OSError):
        models = [line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")]
        cpu = models[0].split(":", 1)[1].strip() if models else ""
    return (
        f"{platform.machine()} {platform.system()} {platform.release()}, {os.cpu_count()} CPUs"
        f"{f' ({cpu})' if cpu else ''}, {platform.python_implementation()} {platform.python_version()}"
    )


def splice(path: Path, section: str, title: str) -> None:
    """Replace the section titled ``title`` in ``path`` (up to the next ``## `` heading), or append it."""
    lines = path.read_text().splitlines() if path.exists() else []
    new = section.rstrip("\n").splitlines()
    if title in lines:
        start = lines.index(title)
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
        tail = lines[end:]
        lines = lines[:start] + new + ([""] if tail else []) + tail
    else:
        while lines and not lines[-1].strip():
            lines.pop()
        lines = [*lines, "", *new] if lines else new
    path.write_text("\n".join(lines) + "\n")


def emit_section(out: str | None, section: str, title: str) -> None:
    """Splice ``section`` into the markdown file ``out``, or print it when no file is named."""
    if out:
        splice(Path(out), section, title)
        print(f"wrote the section '{title[3:]}' of {out}")
    else:
        print(section)


def section_main(
    argv: list[str] | None, script: str, doc: str, section: Callable[[str], str], title: str, *, pooled: bool = False
) -> int:
    """The command line of a bench script that writes one section: ``--out FILE`` splices it there, else prints.
    A ``pooled`` script plays its episodes on ``--workers`` processes (:mod:`episodes`)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--out", help="splice the section into this markdown file (default: print it)")
    if pooled:
        import episodes

        parser.add_argument(
            "--workers", type=int, default=episodes.workers, help="processes playing episodes (default: the cores)"
        )
    args = parser.parse_args(argv)
    if pooled:
        episodes.workers = args.workers
    command = f"python {script}" + (f" --out {args.out}" if args.out else "")
    emit_section(args.out, section(command), title)
    return 0

"""The files a run's workers share on one machine: a transcript gets every worker's calls as whole lines (also lines
longer than a write buffer: each is one append), and a response cache (WAL) takes every worker's answers."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from coteam.llm.base import Completion, Usage
from coteam.llm.cache import ResponseCache
from coteam.llm.transcript import TranscriptRecorder, load_transcript

CALLS = 150
LONG = "x" * 20_000  # longer than a file's write buffer: written in pieces, unless appended whole


def _record(path: str, worker: int) -> None:
    recorder = TranscriptRecorder(path)
    for i in range(CALLS):
        messages = [{"role": "user", "content": f"{worker}/{i} {LONG}"}]
        recorder.record("m", messages, {}, Completion(f"answer {worker}/{i}", Usage(1, 1), "m"))


def _cache(path: str, worker: int) -> None:
    cache = ResponseCache(path)
    for i in range(CALLS):
        cache.put(f"{worker}/{i}", Completion(f"{LONG} {worker}/{i}", Usage(1, 1), "m"))


def _in_processes(target, path: Path, count: int = 3) -> None:
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=target, args=(str(path), w)) for w in range(count)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
        assert w.exitcode == 0


def test_workers_appending_to_one_transcript_leave_every_call_whole(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    _in_processes(_record, path)
    entries = load_transcript(path)  # raises on a line cut or interleaved with another
    assert sorted(e["text"] for e in entries) == sorted(f"answer {w}/{i}" for w in range(3) for i in range(CALLS))


def test_workers_writing_one_cache_keep_every_answer(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    _in_processes(_cache, path)
    cache = ResponseCache(path)
    for w in range(3):
        for i in range(CALLS):
            hit = cache.get(f"{w}/{i}")
            assert hit is not None and hit.text.endswith(f" {w}/{i}") and hit.cached

"""One full cwah-test episode per LLM method on the real local model: steps, calls, tokens, fallbacks, wall time.

    python bench/local_llm_episodes.py --out docs/benchmarks.md   # 30-60 min per method on 2 cores (local-llm extra)
    python bench/local_llm_episodes.py --methods pce --out docs/benchmarks.md   # one method; the others' rows stay

It starts llama.cpp's OpenAI-compatible server on loopback with the packaged Gemma 3 270M (``coteam llm serve``'s
server) and plays cwah-test episode 0 to the end (its horizon, or the goal) with two agents for each LLM method,
every role asked with its narrowed schema (``structured_output=auto``). A 270M model does not play well; the point
is that the whole path works with a real model and what it costs. Each run is recorded as a transcript in
``tests/data/local_llm/episodes/`` (gzip-compressed JSON Lines); ``tests/sim/test_local_llm.py`` replays them offline
and checks that the replay gives the recorded results. ``results.json`` there keeps every method's row, so methods
can be run one at a time; the section (replaced on each run) shows every recorded row.

An episode takes hours with this model on 2 cores, so a run is resumable: every answer also goes into a response
cache (``.<method>-cache.sqlite``, not committed), and a run that was stopped leaves its transcript so far, which
the next run loads into the cache. Re-running the same command then replays the answered calls at once and asks
the model from where it stopped (temperature 0: the same requests). Each run of the command is a segment, kept in
``.<method>-segments.json``: its start, the calls it asked the model and their tokens, and once it ended (finished,
or stopped: the time of its last answer) its seconds. The wall time of an episode played in several segments is
estimated as its tokens times the seconds per token the model took over the segments.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from coteam.llm import Completion, ResponseCache, Usage, cache_key
from coteam.llm.local import LocalLLMServer
from coteam.llm.transcript import load_transcript
from coteam.registry import make_team
from coteam_harness.runner import run_episode
from coteam_harness.trace import load_trace
from coteam_sim.suites import get_suite
from local_llm import AGENTS, DATA, EPISODE, METHODS, SUITE, llm_params

TITLE = "## Full episodes on a real local model"
EPISODES = DATA / "episodes"
RESULT_FIELDS = ("steps", "transport_rate", "llm_calls", "tokens", "llm_fallbacks")
TIMEOUT_S = 300  # per request: late in an episode the prompts are long, and this measures the path, not a deadline


def transcript_path(method: str) -> Path:
    return EPISODES / f"{method}.jsonl.gz"


def transcript_entries(transcript: Path) -> list[dict[str, Any]]:
    """The calls of a transcript (none when it does not exist)."""
    return load_transcript(transcript) if transcript.exists() else []


def live_calls(transcript: Path) -> tuple[int, int]:
    """The calls of a transcript that the model answered (not the response cache), and their tokens."""
    live = [e for e in transcript_entries(transcript) if not e["cached"]]
    return len(live), sum(int(e["usage"]["total_tokens"]) for e in live)


def close_segment(segments: Path, transcript: Path, end: float) -> None:
    """Record the open segment's model calls and tokens (``transcript``) and seconds (its start to ``end``)."""
    runs = json.loads(segments.read_text()) if segments.exists() else []
    if runs and "seconds" not in runs[-1]:
        calls, tokens = live_calls(transcript)
        runs[-1].update(live_calls=calls, live_tokens=tokens, seconds=round(end - runs[-1]["started"], 1))
        segments.write_text(json.dumps(runs, indent=1) + "\n")


def open_segment(segments: Path) -> None:
    runs = json.loads(segments.read_text()) if segments.exists() else []
    segments.write_text(json.dumps([*runs, {"started": time.time()}], indent=1) + "\n")


def episode_wall(segments: Path, tokens: int) -> float | None:
    """The wall time of an episode of ``tokens`` model tokens: its one segment's seconds, or, played in several,
    its tokens times the seconds per token of the segments that asked the model (None when none was measured)."""
    runs = json.loads(segments.read_text())
    if len(runs) == 1:
        return float(runs[0]["seconds"])
    asked = [r for r in runs if r.get("live_tokens")]
    if not asked:
        return None
    return tokens * sum(r["seconds"] for r in asked) / sum(r["live_tokens"] for r in asked)


def seed_cache(cache: Path, *transcripts: Path) -> int:
    """Put every call of ``transcripts`` (plain JSON Lines) into the response cache at ``cache``; the count."""
    n = 0
    with ResponseCache(cache) as store:
        for path in transcripts:
            if not path.exists():
                continue
            for e in transcript_entries(path):
                key = cache_key(e["model"], e["messages"], {**e["sampling"], **e["params"]})
                u = e["usage"]
                usage = Usage(int(u["prompt_tokens"]), int(u["completion_tokens"]), bool(u.get("estimated", False)))
                store.put(key, Completion(e["text"], usage, e["response_model"]))
                n += 1
    return n


def replay_params(method: str, plain: Path) -> dict[str, Any]:
    """The switches that replay ``method``'s recorded episode from ``plain`` (the transcript, decompressed)."""
    with gzip.open(transcript_path(method), "rb") as src, plain.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return {"backend": "llm", "replay": str(plain)}


def episode():
    return get_suite(SUITE).episodes()[EPISODE].build()


def section(command: str, methods: tuple[str, ...] = METHODS) -> str:
    EPISODES.mkdir(parents=True, exist_ok=True)
    results = EPISODES / "results.json"
    recorded: dict[str, Any] = json.loads(results.read_text()) if results.exists() else {}
    recorded.update(suite=SUITE, episode=EPISODE, agents=AGENTS)
    rows = recorded.setdefault("runs", {})
    with LocalLLMServer() as server:
        recorded["model"] = server.model_name
        for method in methods:
            plain, partial = EPISODES / f"{method}.jsonl", EPISODES / f".{method}-partial.jsonl"
            cache, segments = EPISODES / f".{method}-cache.sqlite", EPISODES / f".{method}-segments.json"
            if plain.exists():  # a stopped run's calls: kept for the next runs to resume from
                close_segment(segments, plain, plain.stat().st_mtime)
                with partial.open("a") as out:
                    out.write(plain.read_text())
                plain.unlink()
            resumed = seed_cache(cache, partial)
            params = {**llm_params(server.base_url, server.model_name, "auto"), "transcript": str(plain)}
            params.update(timeout_s=TIMEOUT_S, cache=str(cache))
            trace = EPISODES / f".{method}-trace.json"
            open_segment(segments)
            result = run_episode(episode(), make_team(method, params), n_agents=AGENTS, trace_path=trace)
            close_segment(segments, plain, time.time())
            wall = episode_wall(segments, result.tokens)
            sources: Counter[str] = Counter()
            decisions = load_trace(trace)["decisions"]
            for d in decisions:
                sources.update(e["source"] for e in d["rationale"].get("roles", {}).values())
            trace.unlink()
            with plain.open("rb") as src, gzip.GzipFile(transcript_path(method), "wb", mtime=0) as dst:
                shutil.copyfileobj(src, dst)
            plain.unlink()
            recorded[method] = {k: getattr(result, k) for k in RESULT_FIELDS}
            rows[method] = {
                "decisions": len(decisions),
                "wall_s": None if wall is None else round(wall, 1),
                "wall_estimated": bool(resumed),
                "sources": dict(sources),
            }
            partial.unlink(missing_ok=True)
            cache.unlink(missing_ok=True)
            segments.unlink()
            print(method, recorded[method], rows[method], flush=True)
            results.write_text(json.dumps(recorded, indent=2) + "\n")
    lines = [
        TITLE,
        "",
        f"Produced by `{command}` on this 2-core machine: model {recorded['model']} (the packaged Gemma 3 270M, "
        "Q4_K_M) behind "
        f"llama-cpp-python's server on loopback, {SUITE} episode {EPISODE} played to the end, {AGENTS} agents, "
        f"every role asked with its narrowed schema (json_object + schema), temperature 0, no retries, {TIMEOUT_S} s "
        "per request, the machine otherwise idle. Role answers: "
        "how many the model's answer was used for, and how many fell back to the symbolic answer. A wall time marked "
        "~ is an episode played in several sittings: its tokens times the seconds per token the model took in the "
        "sittings' measured part.",
        "",
        "| method | steps | transport rate | decisions | LLM calls | tokens | role answers used / fallbacks | "
        "wall | s per decision |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for method in METHODS:
        if method not in rows:
            lines.append(f"| {method} | not run yet | | | | | | | |")
            continue
        r, run_ = recorded[method], rows[method]
        s = Counter(run_["sources"])
        wall_s = run_["wall_s"]
        timing = (
            "n/a | n/a"
            if wall_s is None
            else f"{'~' if run_['wall_estimated'] else ''}{wall_s / 60:.0f} min | "
            f"{wall_s / max(1, run_['decisions']):.1f}"
        )
        lines.append(
            f"| {method} | {r['steps']} | {r['transport_rate']:.2f} | {run_['decisions']} | {r['llm_calls']} | "
            f"{r['tokens']:,} | {s['llm']} / {s['fallback'] + s['deadline']} | {timing} |"
        )
    lines += [
        "",
        "The transcripts are in `tests/data/local_llm/episodes/`; `tests/sim/test_local_llm.py` replays each episode "
        "offline (`--set replay=...`) and gets the same steps, transport rate, calls, tokens and fallbacks.",
    ]
    for method in METHODS:
        if "note" in rows.get(method, {}):  # what a reader must know of that recording, kept with its row
            lines += ["", rows[method]["note"]]
        if "replay_prefix" in rows.get(method, {}):
            prefix = rows[method]["replay_prefix"]
            lines += [
                "",
                f"{method}'s recording no longer replays to the end ({prefix['why']}): the test replays its first "
                f"{prefix['steps']} steps, whose every request still finds its recorded answer, until it is "
                "re-recorded.",
            ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from sections import emit_section  # bench/ is on sys.path when this file runs as a script

    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", help="splice the section into this markdown file (default: print it)")
    parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated methods to run")
    args = parser.parse_args(argv)
    methods = tuple(m for m in args.methods.split(",") if m)
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        parser.error(f"unknown method(s) {', '.join(unknown)}; the LLM methods are {', '.join(METHODS)}")
    command = "python bench/local_llm_episodes.py" + (f" --methods {args.methods}" if args.methods else "")
    command += f" --out {args.out}" if args.out else ""
    emit_section(args.out, section(command, methods), TITLE)
    return 0


if __name__ == "__main__":
    sys.exit(main())

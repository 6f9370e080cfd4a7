"""The agents' common-sense category priors: where household things of a kind tend to be.

These are the agent's own beliefs (plain household common sense, deliberately coarse), not the simulator's
placement priors: item name -> category, weights by room name (rooms not searched yet) and by container name
(containers not opened yet), and the chance that an item sits inside a closed container rather than in plain
view. Shared by every reasoning method (``mhp`` samples particles from them, :mod:`coteam.belief` turns them
into location distributions).
"""

from __future__ import annotations

FOOD_NAMES = (
    "apple",
    "banana",
    "bread",
    "burger",
    "cupcake",
    "juice",
    "loaf_bread",
    "orange",
    "pancake",
    "poundcake",
    "pudding",
    "wine",
)
TABLEWARE_NAMES = ("bowl", "coffeepot", "cutleryfork", "fork", "mug", "plate", "wineglass")
# Small personal things ("stuff"): what people leave in offices, living rooms and bedrooms.
STUFF_NAMES = (
    "calculator",
    "cellphone",
    "ipod",
    "iphone",
    "key",
    "lighter",
    "mouse",
    "pen",
    "pencil_bucket",
    "purse",
    "remotecontrol",
)


def item_category(name: str, fallback: str = "") -> str:
    """The category of an item name: food, tableware, stuff, else ``fallback`` (or "misc")."""
    if name in FOOD_NAMES:
        return "food"
    if name in TABLEWARE_NAMES:
        return "tableware"
    if name in STUFF_NAMES:
        return "stuff"
    return fallback or "misc"


ROOM_PRIOR: dict[str, dict[str, float]] = {
    "food": {"kitchen": 0.6, "diningroom": 0.25, "livingroom": 0.2, "storage": 0.1, "bedroom": 0.06},
    "tableware": {"kitchen": 0.7, "diningroom": 0.25, "livingroom": 0.15, "bathroom": 0.05},
    "stuff": {"office": 0.3, "livingroom": 0.25, "storage": 0.15, "bedroom": 0.1, "laundryroom": 0.1},
    "misc": {},
}
ROOM_PRIOR_DEFAULT = 0.05
# Chance that an item in a room is inside a closed container there (C-WAH), rather than in plain view.
IN_CONTAINER_PRIOR: dict[str, dict[str, float]] = {
    "food": {"kitchen": 0.6},
    "tableware": {"kitchen": 0.6},
}
IN_CONTAINER_DEFAULT = 0.35
CONTAINER_PRIOR: dict[str, dict[str, float]] = {
    "food": {"fridge": 0.3, "kitchencabinet": 0.12, "microwave": 0.06, "cabinet": 0.06, "nightstand": 0.04},
    "tableware": {"kitchencabinet": 0.3, "dishwasher": 0.08, "cabinet": 0.08},
    "misc": {},
}
CONTAINER_PRIOR_DEFAULT = 0.02
GOAL_ROOM_FACTOR = 0.3  # TDW-MAT: things to transport are rarely lying next to the goal already


def room_weight(category: str, room_name: str) -> float:
    return ROOM_PRIOR.get(category, {}).get(room_name, ROOM_PRIOR_DEFAULT)


def container_weight(category: str, container_name: str) -> float:
    return CONTAINER_PRIOR.get(category, {}).get(container_name, CONTAINER_PRIOR_DEFAULT)


def in_container_chance(category: str, room_name: str) -> float:
    return IN_CONTAINER_PRIOR.get(category, {}).get(room_name, IN_CONTAINER_DEFAULT)

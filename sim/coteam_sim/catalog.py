"""Facts of the two benchmarks: task definitions, object names, room names and placement priors.

Task item sets and goal targets follow the C-WAH and TDW-MAT definitions used by the papers; fixture layouts
and priors are this simulator's own.
"""

from __future__ import annotations

from dataclasses import dataclass

from coteam.domain.world import Relation

# --- C-WAH -----------------------------------------------------------------------------------------------
CWAH_ROOMS = ("livingroom", "kitchen", "bedroom", "bathroom")
CWAH_HORIZON = 250
CWAH_SUBGOALS = (3, 5)  # inclusive range of sub-goals (goal item instances) per episode


@dataclass(frozen=True)
class CwahTaskDef:
    name: str
    relation: Relation
    target: str  # fixture name
    items: tuple[str, ...]


CWAH_TASKS = (
    CwahTaskDef("prepare_afternoon_tea", Relation.ON, "coffeetable", ("cupcake", "pudding", "apple", "juice", "wine")),
    CwahTaskDef("wash_dishes", Relation.IN, "dishwasher", ("plate", "fork")),
    CwahTaskDef(
        "prepare_a_meal",
        Relation.ON,
        "dinnertable",
        ("coffeepot", "cupcake", "pancake", "poundcake", "pudding", "apple", "juice", "wine"),
    ),
    CwahTaskDef(
        "put_groceries", Relation.IN, "fridge", ("cupcake", "pancake", "poundcake", "pudding", "apple", "juice", "wine")
    ),
    CwahTaskDef("setup_dinner_table", Relation.ON, "dinnertable", ("plate", "fork")),
)

# Fixtures per room: (name, is_container).
CWAH_FIXTURES: dict[str, tuple[tuple[str, bool], ...]] = {
    "kitchen": (
        ("fridge", True),
        ("dishwasher", True),
        ("kitchencabinet", True),
        ("kitchencabinet", True),
        ("microwave", True),
        ("stove", True),
        ("dinnertable", False),
        ("kitchencounter", False),
    ),
    "livingroom": (("coffeetable", False), ("cabinet", True), ("sofa", False), ("bookshelf", False)),
    "bedroom": (("bed", False), ("nightstand", True), ("closet", True), ("desk", False)),
    "bathroom": (("bathroomcabinet", True), ("bathroomcounter", False)),
}

_FOOD_PRIOR = {
    "fridge": 0.30,
    "kitchencabinet": 0.14,
    "kitchencounter": 0.14,
    "dinnertable": 0.08,
    "microwave": 0.06,
    "coffeetable": 0.08,
    "cabinet": 0.06,
    "nightstand": 0.05,
    "desk": 0.05,
    "bookshelf": 0.04,
}
_DISH_PRIOR = {
    "kitchencabinet": 0.34,
    "kitchencounter": 0.20,
    "dinnertable": 0.12,
    "dishwasher": 0.06,
    "coffeetable": 0.08,
    "cabinet": 0.08,
    "bathroomcounter": 0.04,
    "desk": 0.04,
    "bookshelf": 0.04,
}
_COFFEEPOT_PRIOR = {
    "kitchencounter": 0.35,
    "kitchencabinet": 0.25,
    "stove": 0.10,
    "dinnertable": 0.10,
    "coffeetable": 0.10,
    "cabinet": 0.10,
}
_MISC_PRIOR = {
    "bookshelf": 0.15,
    "desk": 0.15,
    "sofa": 0.1,
    "nightstand": 0.1,
    "closet": 0.1,
    "bathroomcabinet": 0.1,
    "bathroomcounter": 0.1,
    "coffeetable": 0.1,
    "kitchencounter": 0.1,
}

CWAH_ITEM_PRIORS: dict[str, dict[str, float]] = {
    **{n: _FOOD_PRIOR for n in ("cupcake", "pudding", "apple", "juice", "wine", "pancake", "poundcake")},
    "plate": _DISH_PRIOR,
    "fork": _DISH_PRIOR,
    "coffeepot": _COFFEEPOT_PRIOR,
}
CWAH_DISTRACTORS = ("book", "remotecontrol", "towel", "toothbrush", "cellphone", "mug", "wineglass", "candle")
CWAH_ITEM_CATEGORY = {
    **{n: "food" for n in ("cupcake", "pudding", "apple", "juice", "wine", "pancake", "poundcake")},
    "plate": "tableware",
    "fork": "tableware",
    "coffeepot": "tableware",
    "mug": "tableware",
    "wineglass": "tableware",
}

# --- TDW-MAT ---------------------------------------------------------------------------------------------
TDW_ROOMS = ("livingroom", "kitchen", "bedroom", "office", "bathroom", "diningroom", "storage", "laundryroom")
TDW_HORIZON = 3000
TDW_TARGETS = 10
TDW_CARRIER_CAPACITY = 3
TDW_CONTAINER_COUNTS = {"low": 2, "high": 5}
TDW_FOOD_CONTAINERS = ("bowl", "plate", "tea_tray")
TDW_FOOD_OBJECTS = ("bread", "burger", "loaf_bread", "apple", "banana", "orange")
TDW_STUFF_CONTAINERS = ("plastic_basket", "wicker_basket", "wood_basket")
TDW_STUFF_OBJECTS = ("iphone", "pen", "key", "ipod", "lighter", "purse", "calculator", "pencil_bucket", "mouse")
TDW_FIXTURES: dict[str, tuple[str, ...]] = {
    "livingroom": ("sofa", "coffee_table"),
    "kitchen": ("counter", "kitchen_table"),
    "bedroom": ("bed", "wardrobe_shelf"),
    "office": ("desk", "shelf"),
    "bathroom": ("cabinet_top",),
    "diningroom": ("dining_table",),
    "storage": ("rack",),
    "laundryroom": ("washer_top",),
}
# Room preference for each category ("mostly in the kitchen, but not always").
TDW_ROOM_PRIORS = {
    "food": {"kitchen": 0.45, "diningroom": 0.2, "livingroom": 0.15, "storage": 0.1, "office": 0.05, "bedroom": 0.05},
    "stuff": {
        "office": 0.3,
        "livingroom": 0.25,
        "bedroom": 0.1,
        "storage": 0.15,
        "laundryroom": 0.1,
        "bathroom": 0.05,
        "kitchen": 0.05,
    },
}
TDW_ON_SURFACE_PROBABILITY = 0.5  # otherwise on the floor

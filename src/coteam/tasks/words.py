"""A person's request in words, read as goal lines of the home's world file: the symbolic reading.

``read_request("put two cups in the cabinet", scene)`` gives the goal ``in(cup, cabinet): 2``: every name resolved
against the home's own items and fixtures, and the count checked against what the home holds. What the grammar
reads, per clause (clauses are joined by "and then", ";" or ", then"):

    [please] [VERB] ITEMS PREPOSITION PLACE

* VERB: put, place, bring, carry, take, move, get, set, store, stow, fetch, deliver, leave (optional).
* ITEMS: one or more ``[COUNT] THING`` joined by "and" or commas. COUNT: a number (digits or words), a / an / one,
  both (exactly two), all / every / each / all the, the (one of a singular thing, all of a plural one), none (one
  of a singular thing, all of a plural one). THING: an item class (``apple`` / ``apples``), one of its common
  synonyms (:data:`SYNONYMS`), or a category of the home's items (``all the food``: every item of that category).
* PREPOSITION: in / into / inside, on / onto, to / at / near / next to / by / beside. In a home of C-WAH rules the
  relation is the place's kind (a container's is ``in``, a surface's ``on``: nothing goes into a table); in a home of
  TDW-MAT rules every goal is ``near``.
* PLACE: a fixture named as the file names it (``kitchentable``), in words (``kitchen table``), by a synonym
  (``refrigerator``) or by the last word alone when only one fixture ends so (``the table`` when the home has one
  table); ``the cabinet in the kitchen`` narrows by room; a room names its only fixture.

Nothing is guessed. A request that could mean two things, or that the home cannot satisfy, raises
:class:`RequestRefused` with one line that names the choices (``which table: coffeetable or kitchentable?``) or
what is there (``no banana in this home (items: apple, cupcake, ...)``). Words and their plurals come from
``inflect`` (a maintained English inflection library).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache

import inflect

from coteam.domain.world import Benchmark, GoalPredicate, Relation, Scene

VERBS = frozenset(
    [
        "put",
        "place",
        "bring",
        "carry",
        "take",
        "move",
        "get",
        "set",
        "store",
        "stow",
        "fetch",
        "deliver",
        "leave",
        "return",
        "tidy",
        "transport",
    ]
)
POLITE = frozenset(
    ["please", "could", "can", "would", "will", "you", "robots", "robot", "team", "kindly", "go", "and", "then", "now"]
)
PREPOSITIONS = {
    "in": "in",
    "into": "in",
    "inside": "in",
    "on": "on",
    "onto": "on",
    "upon": "on",
    "to": "to",
    "at": "to",
    "near": "to",
    "next": "to",
    "by": "to",
    "beside": "to",
    "toward": "to",
    "towards": "to",
}
ARTICLES = frozenset(["the", "a", "an", "my", "our", "this", "these", "those"])
ALL = frozenset(["all", "every", "each"])
VAGUE = frozenset(["some", "few", "several", "many", "most", "any"])
NUMBERS = {
    w: n
    for n, w in enumerate(
        ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]
    )
}
# common English names of household things and furniture, to the names a home's file may use
SYNONYMS = {
    "mug": "cup",
    "mugs": "cup",
    "refrigerator": "fridge",
    "icebox": "fridge",
    "cupboard": "cabinet",
    "couch": "sofa",
    "settee": "sofa",
    "counter": "kitchencounter",
    "worktop": "kitchencounter",
    "nightstand": "nightstand",
    "bedside": "nightstand",
    "groceries": "food",
    "grocery": "food",
    "snacks": "food",
    "snack": "food",
    "dishes": "dish",
    "drinks": "drink",
    "beverages": "drink",
    "tableware": "dish",
}


class RequestRefused(ValueError):
    """A request the home's robots cannot take as it stands; the message is one line naming the choices."""


@dataclass(frozen=True)
class GoalLine:
    relation: Relation
    item: str
    target: str
    count: int

    @classmethod
    def of(cls, predicate: GoalPredicate, names: Mapping[int, str]) -> GoalLine:
        """A task's goal predicate as the line a world file writes (``names``: object id -> name)."""
        return cls(predicate.relation, predicate.item, names[predicate.target], predicate.count)

    def text(self) -> str:
        return f"{self.relation.value}({self.item}, {self.target}): {self.count}"

    def progress(self, done: int) -> str:
        """The line with how many are in place: ``in(cup, cabinet): 1 of 2``."""
        return f"{self.relation.value}({self.item}, {self.target}): {done} of {self.count}"


@cache
def _inflect() -> inflect.engine:
    return inflect.engine()


def singular(word: str) -> str:
    """``apples`` -> ``apple``; a word that is no plural stays as it is."""
    found = _inflect().singular_noun(word)  # type: ignore[arg-type]
    return found if isinstance(found, str) and found else word


def plural(word: str) -> str:
    return _inflect().plural(word)  # type: ignore[arg-type]


class HomeWords:
    """What a home's robots can be asked about: its item classes (and how many of each), their categories, its
    fixtures (kind and room) and its rooms."""

    def __init__(self, scene: Scene):
        self.scene = scene
        self.counts: dict[str, int] = {}
        self.categories: dict[str, list[str]] = {}
        for item in scene.items:
            if item.capacity > 0:
                continue  # a carrier is a tool, not something to deliver
            self.counts[item.name] = self.counts.get(item.name, 0) + 1
            if item.category:
                names = self.categories.setdefault(item.category.lower(), [])
                if item.name not in names:
                    names.append(item.name)
        containers = {c.id for c in scene.containers}
        self.fixtures = {
            f.name: ("container" if f.id in containers else "surface") for f in (*scene.containers, *scene.surfaces)
        }
        self.fixture_room = {f.name: scene.floorplan.room(f.room).name for f in (*scene.containers, *scene.surfaces)}
        self.rooms = {r.name for r in scene.floorplan.rooms}

    # --- things ------------------------------------------------------------------------------------------------
    def things(self, words: Sequence[str]) -> tuple[list[str], bool, bool] | None:
        """The item classes ``words`` name, whether the words were plural, and whether they named a category;
        None when they name nothing of the home."""
        if not words:
            return None
        joined = "".join(words)
        was_plural = singular(joined) != joined
        for candidate in (joined, singular(joined)):
            name = SYNONYMS.get(candidate, candidate)
            if name in self.counts:
                return [name], was_plural, False
            if name in self.categories:
                return list(self.categories[name]), True, True
        last = SYNONYMS.get(words[-1], words[-1])
        for candidate in (last, singular(last)):
            if candidate in self.categories:
                return list(self.categories[candidate]), True, True
        return None

    # --- places ------------------------------------------------------------------------------------------------
    def place(self, words: Sequence[str]) -> str:
        """The one fixture ``words`` name (RequestRefused when none or several)."""
        words = [w for w in words if w not in ARTICLES]
        room = None
        for k in range(len(words) - 1):  # "the cabinet in the kitchen"
            if words[k] in ("in", "of") and "".join(words[k + 1 :]) in self.rooms:
                room = "".join(words[k + 1 :])
                words = words[:k]
                break
        if not words:
            raise RequestRefused("say where to put it: " + self._listed(sorted(self.fixtures)))
        joined = "".join(SYNONYMS.get(w, w) for w in words)
        exact = SYNONYMS.get("".join(words), joined)
        if exact in self.fixtures and (room is None or self.fixture_room[exact] == room):
            return exact
        if joined in self.rooms and room is None:
            inside = sorted(f for f, r in self.fixture_room.items() if r == joined)
            if len(inside) == 1:
                return inside[0]
            if not inside:
                raise RequestRefused(f"there is no furniture in the {joined} to put things in or on")
            raise RequestRefused(f"where in the {joined}: {self._or(inside)}?")
        head = SYNONYMS.get(words[-1], words[-1])
        matches = sorted(f for f in self.fixtures if f.endswith(head) or f.endswith(singular(head)))
        if len(words) > 1:  # "kitchen cabinet" when the home says "kitchencabinet", or "cabinet" with a room word
            qualifier = "".join(words[:-1])
            narrowed = [f for f in matches if qualifier in f or self.fixture_room[f] == qualifier]
            matches = narrowed or matches
        if room is not None:
            matches = [f for f in matches if self.fixture_room[f] == room]
        if len(matches) == 1:
            return matches[0]
        said = " ".join(words) + (f" in the {room}" if room else "")
        if not matches:
            raise RequestRefused(
                f"no place called {said!r} in this home (places: {self._listed(sorted(self.fixtures))})"
            )
        raise RequestRefused(f"which {words[-1]}: {self._or(matches)}?")

    def relation(self, fixture: str) -> Relation:
        if self.scene.benchmark == Benchmark.TDWMAT:
            return Relation.NEAR
        return Relation.IN if self.fixtures[fixture] == "container" else Relation.ON

    @staticmethod
    def _or(names: Sequence[str]) -> str:
        return " or ".join(names) if len(names) == 2 else ", ".join(names[:-1]) + " or " + names[-1]

    @staticmethod
    def _listed(names: Sequence[str]) -> str:
        return ", ".join(names) or "none"


_CLAUSES = re.compile(r"\s*(?:;|,?\s+and then\s+|,\s*then\s+|\.\s+)\s*")
_WORD = re.compile(r"[a-z0-9]+")


def read_request(sentence: str, scene: Scene) -> list[GoalLine]:
    """The goals a request in words asks for in ``scene``'s home (module docstring); ``GoalLine.text`` writes one
    in world-file syntax."""
    if not isinstance(sentence, str) or not sentence.strip():
        raise RequestRefused("the request is empty: say what to put where, e.g. 'put the apples in the fridge'")
    if len(sentence) > 500:
        raise RequestRefused(f"the request is {len(sentence)} characters long: say it in at most 500")
    home = HomeWords(scene)
    lines: dict[tuple[Relation, str, str], int] = {}
    for clause in _CLAUSES.split(sentence.strip().lower()):
        if not clause.strip():
            continue
        for line in _read_clause(_WORD.findall(clause.replace("-", "")), home):
            key = (line.relation, line.item, line.target)
            lines[key] = lines.get(key, 0) + line.count
    out = []
    for (relation, item, target), count in lines.items():
        if count > home.counts[item]:
            raise RequestRefused(f"{count} {plural(item)} asked for {target}, and this home has {home.counts[item]}")
        out.append(GoalLine(relation, item, target, count))
    if not out:
        raise RequestRefused("nothing to do in that request: say what to put where")
    return out


def _read_clause(words: list[str], home: HomeWords) -> list[GoalLine]:
    while words and (words[0] in POLITE or words[0] in VERBS):
        words = words[1:]
    split = next((k for k, w in enumerate(words) if w in PREPOSITIONS and k > 0), None)
    if split is None:
        raise RequestRefused(f"say where to put them: '{' '.join(words)}' names no place")
    place_words = words[split + 1 :]
    if words[split] == "next" and place_words[:1] == ["to"]:
        place_words = place_words[1:]
    out: list[GoalLine] = []
    # "... in the fridge and the plates on the table": what follows "and" with a place of its own is a clause
    for k, w in enumerate(place_words):
        if w == "and" and any(x in PREPOSITIONS for x in place_words[k + 2 :]):
            out += _read_clause(place_words[k + 1 :], home)
            place_words = place_words[:k]
            break
    fixture = home.place(place_words)
    relation = home.relation(fixture)
    mine = [
        GoalLine(relation, item, fixture, count)
        for part in _parts(words[:split])
        for item, count in _things(part, home)
    ]
    return mine + out


def _parts(words: list[str]) -> list[list[str]]:
    """ITEMS split at "and" (commas are gone with the punctuation)."""
    parts, current = [], []
    for w in words:
        if w == "and":
            if current:
                parts.append(current)
            current = []
        else:
            current.append(w)
    if current:
        parts.append(current)
    if not parts:
        raise RequestRefused("say what to put there")
    return parts


def _things(words: list[str], home: HomeWords) -> list[tuple[str, int]]:
    """One ``[COUNT] THING`` as (item class, count) pairs (a category gives one pair per class)."""
    count: int | str | None = None
    while words and (words[0] in ARTICLES or words[0] in ALL or words[0] in NUMBERS or words[0].isdigit()
                     or words[0] in VAGUE or words[0] == "both" or words[0] == "of"):  # fmt: skip
        w = words.pop(0)
        if w in VAGUE:
            raise RequestRefused(f"how many {' '.join(words) or 'of them'}: say a number or all")
        if w in ALL:
            count = "all"
        elif w == "both":
            count = 2
        elif w.isdigit():
            count = int(w)
        elif w in NUMBERS:
            count = NUMBERS[w]
        elif w in ("a", "an") and count is None:
            count = 1
        elif w == "the" and count is None:
            count = "the"
    named = home.things(words)
    items = ", ".join(sorted(home.counts)) or "none"
    if named is None and words in (["everything"], ["things"], ["it"], ["them"]):
        raise RequestRefused(f"say which things: {items}")
    if named is None:
        said = singular("".join(words)) if len(words) == 1 else " ".join(words) or "such thing"
        raise RequestRefused(f"no {said} in this home (items: {items})")
    names, was_plural, category = named
    if category:
        if count not in (None, "all", "the"):
            said = " ".join(words)
            raise RequestRefused(f"which {said}: {HomeWords._or(sorted(names))}? ({count} {said} names no one thing)")
        return [(n, home.counts[n]) for n in names]
    (name,) = names
    if count == 0:
        raise RequestRefused(f"zero {plural(name)} is nothing to do")
    if count in (None, "the"):
        count = home.counts[name] if was_plural else 1
    elif count == "all":
        count = home.counts[name]
    return [(name, int(count))]


REPORT_FILLER = frozenset(["there", "is", "are", "was", "were", "i", "think", "left", "put", "saw", "some", "all"])


def read_report(sentence: str, scene: Scene) -> list[tuple[str, str]]:
    """What a person says of where things are -- "the cups are in the kitchen cabinet", "there is an apple on the
    sofa" -- as (item class, fixture) pairs of ``scene``'s home (a category gives each of its classes);
    :class:`RequestRefused`, one line, when it names no thing or no place of the home."""
    if not isinstance(sentence, str) or not sentence.strip():
        raise RequestRefused("say where things are, e.g. 'the cups are in the kitchen cabinet'")
    if len(sentence) > 500:
        raise RequestRefused(f"the report is {len(sentence)} characters long: say it in at most 500")
    home = HomeWords(scene)
    words = [w for w in _WORD.findall(sentence.lower().replace("-", "")) if w not in REPORT_FILLER]
    split = next((k for k, w in enumerate(words) if w in PREPOSITIONS and k > 0), None)
    if split is None:
        raise RequestRefused(f"say where: '{sentence.strip()}' names no place")
    fixture = home.place(words[split + 1 :])
    out = []
    for part in _parts(words[:split]):
        part = [w for w in part if w not in ARTICLES and w not in NUMBERS and not w.isdigit()]
        named = home.things(part)
        if named is None:
            items = ", ".join(sorted(home.counts)) or "none"
            raise RequestRefused(f"no {' '.join(part) or 'such thing'} in this home (items: {items})")
        out += [(name, fixture) for name in named[0]]
    return out

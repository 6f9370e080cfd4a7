"""The one registry of reasoning methods, in the manner of Gymnasium's environment registry.

Methods are found through the ``coteam.methods`` entry-point group: each entry point names a method and points
at its team class with a lazy ``module:attr`` string, so nothing is imported until the method is used and any
installed package can add a method::

    [project.entry-points."coteam.methods"]
    mymethod = "mypackage.mymethod:MyTeam"

:func:`register_method` does the same from code (tests, notebooks). A team class declares its typed config
(``Config``, a :class:`~coteam.kit.config.MethodConfig`); :func:`make_team` validates the parameters against it
once, before any episode runs, and an unknown or ill-typed switch is a one-line ``ValueError`` naming the switch
and what it accepts.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from coteam.kit.team import MethodTeam

ENTRY_POINT_GROUP = "coteam.methods"


@dataclass(frozen=True)
class MethodSpec:
    """A registered method: its name and where its team class lives (loaded on first use)."""

    name: str
    entry_point: str | type[MethodTeam]

    def load(self) -> type[MethodTeam]:
        if not isinstance(self.entry_point, str):
            return self.entry_point
        module, _, attr = self.entry_point.partition(":")
        if not module or not attr:
            raise ValueError(f"method {self.name!r}: entry point {self.entry_point!r} is not 'module:attr'")
        target: Any = importlib.import_module(module)
        for part in attr.split("."):
            target = getattr(target, part)
        return target


_REGISTERED: dict[str, MethodSpec] = {}


def register_method(name: str, entry_point: str | type[MethodTeam]) -> MethodSpec:
    """Register a method by name: ``entry_point`` is its team class or a lazy ``"module:attr"`` string."""
    if name in _REGISTERED or name in _installed():
        raise ValueError(f"method {name!r} is already registered")
    spec = MethodSpec(name, entry_point)
    _REGISTERED[name] = spec
    return spec


def unregister_method(name: str) -> None:
    """Remove a method registered with :func:`register_method` (installed entry points stay)."""
    _REGISTERED.pop(name, None)


def _installed() -> dict[str, MethodSpec]:
    return {ep.name: MethodSpec(ep.name, ep.value) for ep in entry_points(group=ENTRY_POINT_GROUP)}


def method_specs() -> dict[str, MethodSpec]:
    """Every known method by name (installed entry points and code registrations), nothing imported yet."""
    return {**_installed(), **_REGISTERED}


def method_names() -> list[str]:
    return sorted(method_specs())


def method_class(name: str) -> type[MethodTeam]:
    specs = method_specs()
    if name not in specs:
        raise KeyError(f"unknown method {name!r}; known methods: {', '.join(sorted(specs))}")
    return specs[name].load()


def method_config(name: str, params: Mapping[str, Any] | None = None) -> Any:
    """The method's validated config for ``params`` (a one-line ``ValueError`` on a bad switch)."""
    cls = method_class(name)
    return cls.Config.parse_switches(name, params or {})


def observes_world(name: str, params: Mapping[str, Any] | None = None) -> bool:
    """Whether a team of method ``name`` with ``params`` sees the whole world (the runtime gives it full
    observability): the method's ``full_observability``, or its switch of that name (the oracle's)."""
    config = method_config(name, params)
    return bool(getattr(config, "full_observability", method_class(name).full_observability))


def make_team(name: str, params: Mapping[str, Any] | None = None) -> MethodTeam:
    """A team of method ``name`` for a whole run: validated config, then the team (and its model backend) built
    once; call ``reset`` for each episode."""
    cls = method_class(name)
    return cls(cls.Config.parse_switches(name, params or {}), name=name)

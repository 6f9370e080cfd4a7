"""``evocf``: EvoCF, centralised planning with counterfactual joint plans and rules induced from failures (see
:mod:`.team`).

Registered as ``evocf`` through the ``coteam.methods`` entry-point group (``coteam.methods.evocf:EvocfTeam``)."""

from coteam.methods.evocf.team import EvocfConfig, EvocfTeam

__all__ = ["EvocfConfig", "EvocfTeam"]

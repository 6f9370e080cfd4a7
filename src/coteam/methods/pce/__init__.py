"""PCE: Planner → Composer → Evaluator over assumption decision trees (see :mod:`.reasoner`).

Registered as ``pce`` through the ``coteam.methods`` entry-point group (``coteam.methods.pce:PceTeam``)."""

from coteam.methods.pce.reasoner import PceAgent, PceConfig, PceTeam

__all__ = ["PceAgent", "PceConfig", "PceTeam"]

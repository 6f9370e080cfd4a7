"""``coela``: the CoELA-style communication-heavy baseline (see :mod:`.team`).

Registered as ``coela`` through the ``coteam.methods`` entry-point group (``coteam.methods.coela:CoelaTeam``)."""

from coteam.methods.coela.team import CoelaAgent, CoelaTeam

__all__ = ["CoelaAgent", "CoelaTeam"]

"""REVECA: relevance estimation, adaptive planning over relevance and relative proximity (see :mod:`.team`).

Registered as ``reveca`` through the ``coteam.methods`` entry-point group (``coteam.methods.reveca:RevecaTeam``)."""

from coteam.methods.reveca.team import RevecaAgent, RevecaConfig, RevecaTeam

__all__ = ["RevecaAgent", "RevecaConfig", "RevecaTeam"]

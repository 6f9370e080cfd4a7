"""CoBel-World: a collaborative belief world with zero- and first-order beliefs, plan prediction and gated
communication (see :mod:`.team`).

Registered as ``cobel`` through the ``coteam.methods`` entry-point group (``coteam.methods.cobel:CobelTeam``)."""

from coteam.methods.cobel.team import CobelAgent, CobelConfig, CobelTeam

__all__ = ["CobelAgent", "CobelConfig", "CobelTeam"]

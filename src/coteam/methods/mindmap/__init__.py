"""The Mind-Map agent: a schema-bound mind map of the teammates' intentions, the cooperative plan and the talk
strategy, updated and then acted on at every decision (see :mod:`.team`).

Registered as ``mindmap`` through the ``coteam.methods`` entry-point group (``coteam.methods.mindmap:MindmapTeam``)."""

from coteam.methods.mindmap.team import MindmapAgent, MindmapConfig, MindmapTeam

__all__ = ["MindmapAgent", "MindmapConfig", "MindmapTeam"]

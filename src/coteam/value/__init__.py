"""The shared symbolic value model: the benchmarks' abstract models (:mod:`coteam.value.abstract`, also searched
by the ``mhp`` baseline) and the team value model that rolls them out from a belief state
(:mod:`coteam.value.team`, read by the symbolic roles of the reasoning methods)."""

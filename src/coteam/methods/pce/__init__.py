"""PCE: Planner → Composer → Evaluator over assumption decision trees (see :mod:`.reasoner`)."""

from coteam.methods.pce.reasoner import SWITCHES, PceConfig, PceReasoner
from coteam.reasoning import MethodSpec, PerAgentTeam, register_method

register_method(
    MethodSpec(
        "pce",
        "Planner-Composer-Evaluator: assumption trees scored by likelihood, gain and cost",
        lambda params: PerAgentTeam("pce", PceReasoner, params),
        SWITCHES,
    )
)

__all__ = ["PceConfig", "PceReasoner"]

"""The method kit: what every reasoning method shares, so that a method is only its decision procedure and its
prompts. Typed configs (:mod:`.config`), team base classes with the episode lifecycle (:mod:`.team`), the LLM-role
toolkit (:mod:`.roles`), the role-method base (:mod:`.deliberation`), structured explanations
(:mod:`.explanation`), the situation slots of prompts (:mod:`.context`), lettered option lists
(:mod:`.lettered`), shared answer models and the message role (:mod:`.answers`), what the hybrid backend asks
a model that the belief cannot know (:mod:`.knowledge`), a method's cross-episode store (:mod:`.store`) and a
local text embedder for similarity retrieval (:mod:`.embedding`). Register a method with
:func:`coteam.registry.register_method` or the ``coteam.methods`` entry-point group."""

from coteam.kit.config import MethodConfig, RoleMethodConfig, Switch, ValueRoleConfig
from coteam.kit.context import SITUATION_SLOTS, TEAM_SLOTS, actions_text, dialogue_text, situation_slots, team_slots
from coteam.kit.deliberation import Deliberation, RoleAgent
from coteam.kit.explanation import Explanation, Section, TreeNode, rationale_section
from coteam.kit.lettered import Lettered, letter, match_option
from coteam.kit.roles import RoleKit, RoleSession
from coteam.kit.team import AgentReasoner, CentralisedTeam, MethodTeam, PerAgentTeam, TeamWrapper

__all__ = [
    "SITUATION_SLOTS",
    "TEAM_SLOTS",
    "AgentReasoner",
    "CentralisedTeam",
    "Deliberation",
    "Explanation",
    "Lettered",
    "MethodConfig",
    "MethodTeam",
    "PerAgentTeam",
    "RoleAgent",
    "RoleKit",
    "RoleMethodConfig",
    "RoleSession",
    "Section",
    "Switch",
    "TeamWrapper",
    "TreeNode",
    "ValueRoleConfig",
    "actions_text",
    "dialogue_text",
    "letter",
    "match_option",
    "rationale_section",
    "situation_slots",
    "team_slots",
]

"""The method kit: what every reasoning method shares, so that a method is only its decision procedure and its
prompts. A method imports what it needs from here, one surface:

- typed configs (:mod:`.config`) and team base classes with the episode lifecycle (:mod:`.team`);
- the LLM-role toolkit: roles typed by their question and answer (``Role[Q, A]``, ``RoleContext[Q]``, from
  :mod:`coteam.llm`), sessions (:mod:`.roles`), the role-method base (:mod:`.deliberation`), shared answers and the
  message and choice roles (:mod:`.answers`), lettered option lists (:mod:`.lettered`), answer schemas
  (``model_schema``, ``narrow``);
- the situation slots of prompts (:mod:`.context`), structured explanations (:mod:`.explanation`);
- the rule policy methods fall back on (:mod:`.policies`), what the hybrid backend asks a model that the belief
  cannot know (:mod:`.knowledge`), a method's cross-episode store (:mod:`.store`) and a local text embedder for
  similarity retrieval (:mod:`.embedding`).

Register a method with :func:`coteam.registry.register_method` or the ``coteam.methods`` entry-point group."""

from coteam.kit.answers import Choosing, MessageAnswer, StrictAnswer, choice_role, message_role
from coteam.kit.config import MethodConfig, RoleMethodConfig, Switch, ValueRoleConfig
from coteam.kit.context import SITUATION_SLOTS, TEAM_SLOTS, actions_text, dialogue_text, situation_slots, team_slots
from coteam.kit.deliberation import Deliberation, RoleAgent
from coteam.kit.embedding import TextEmbedder, make_embedder, top_k
from coteam.kit.explanation import Explanation, Section, TreeNode, rationale_section
from coteam.kit.lettered import Lettered, action_text_schema, letter, letter_schema, match_option
from coteam.kit.policies import rule_based_candidates, rule_based_choice
from coteam.kit.roles import RoleKit, RoleSession
from coteam.kit.store import MethodStore, StoreSchema, TableMerge
from coteam.kit.team import AgentReasoner, CentralisedTeam, MethodTeam, PerAgentTeam, TeamRound, TeamWrapper
from coteam.llm import Doubt, Role, RoleContext
from coteam.llm.schema import model_schema, narrow, regex_literal

__all__ = [
    "SITUATION_SLOTS",
    "TEAM_SLOTS",
    "AgentReasoner",
    "CentralisedTeam",
    "Choosing",
    "Deliberation",
    "Doubt",
    "Explanation",
    "Lettered",
    "MessageAnswer",
    "MethodConfig",
    "MethodStore",
    "MethodTeam",
    "PerAgentTeam",
    "Role",
    "RoleAgent",
    "RoleContext",
    "RoleKit",
    "RoleMethodConfig",
    "RoleSession",
    "Section",
    "StoreSchema",
    "StrictAnswer",
    "Switch",
    "TableMerge",
    "TeamRound",
    "TeamWrapper",
    "TextEmbedder",
    "TreeNode",
    "ValueRoleConfig",
    "action_text_schema",
    "actions_text",
    "choice_role",
    "dialogue_text",
    "letter",
    "letter_schema",
    "make_embedder",
    "match_option",
    "message_role",
    "model_schema",
    "narrow",
    "rationale_section",
    "regex_literal",
    "rule_based_candidates",
    "rule_based_choice",
    "situation_slots",
    "team_slots",
    "top_k",
]

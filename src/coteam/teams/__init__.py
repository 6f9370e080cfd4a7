"""Built-in teams: the baselines every reasoning method is compared against.

Importing this package registers them in :mod:`coteam.reasoning`'s method registry.
"""

from coteam.teams import mcts, oracle, random_team, rule_based  # noqa: F401  (registration side effects)

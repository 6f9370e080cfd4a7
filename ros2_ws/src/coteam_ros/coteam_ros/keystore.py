"""The team's signing keys at launch (``security:`` of the team file, ``coteam.home.signing``)."""

from __future__ import annotations

from coteam.home.signing import init_keystore
from coteam_ros.operator import OPERATOR
from coteam_ros.team_config import ConfigError, TeamConfig


def prepare_keystore(cfg: TeamConfig) -> None:
    """Make sure the planners of ``cfg`` can sign: with a world or a twin (one machine runs the whole simulated team)
    a missing keystore or key is made now, the operator's (``coteam tell``) too; on hardware every robot's key and
    the team's public keys must exist already (``coteam keys init`` makes them, and the operator's)."""
    sec = cfg.security
    if not sec.sign:
        return
    names = cfg.robot_names
    simulated = cfg.world is not None or cfg.twin is not None
    keys = [sec.public_keys, *map(sec.private_key, [*names, *([OPERATOR] if simulated else [])])]
    missing = [str(p) for p in keys if not p.is_file()]
    if not missing:
        return
    if not simulated:
        raise ConfigError(
            f"{cfg.source}: security: no {missing[0]}; make the team's keys with `coteam keys init {cfg.source}` "
            "and give each robot its own"
        )
    init_keystore(sec.keystore, [*names, OPERATOR])

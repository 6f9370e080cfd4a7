"""How the bridges reach the Unity simulators: the command line's ``--thor-*`` and ``--tdw-*`` settings, readable
without either package installed."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ThorSettings:
    """How to start AI2-THOR: a local Unity build (``executable``) or the one ``ai2thor`` downloads, on
    ``platform`` (``CloudRendering``: no X display needed); ``timeout_s`` per action."""

    executable: str | None = None
    platform: str | None = None
    timeout_s: float = 100.0


@dataclass(frozen=True)
class TdwSettings:
    """How to reach TDW: ``launch_build`` (the controller downloads its build on first use and starts it) or a build
    started by hand that connects to ``port`` and serves every episode of the run; ``connect_timeout_s`` for the
    build to connect (a first download included), ``timeout_s`` for each frame."""

    port: int = 1071
    launch_build: bool = True
    timeout_s: float = 60.0
    connect_timeout_s: float = 900.0


@dataclass(frozen=True)
class UnitySettings:
    """Both simulators' settings, as one run or bench takes them."""

    thor: ThorSettings = field(default_factory=ThorSettings)
    tdw: TdwSettings = field(default_factory=TdwSettings)

    @classmethod
    def of(
        cls,
        thor_executable: str | None = None,
        thor_platform: str | None = None,
        tdw_port: int = TdwSettings.port,
        tdw_launch: bool = TdwSettings.launch_build,
    ) -> UnitySettings:
        """From the flat options of the command line, a team file's ``world.unity`` or the sim_bridge's parameters
        (an empty string is no value)."""
        return cls(
            ThorSettings(thor_executable or None, thor_platform or None),
            TdwSettings(port=tdw_port, launch_build=tdw_launch),
        )

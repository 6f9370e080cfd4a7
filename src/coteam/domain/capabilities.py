"""What one robot's body can do: its grippers, whether a door needs a free one, how much it carries and how fast it
drives. A team or world file names them per robot (``robots[].capabilities``); skills and every method's options
keep to them, and the executor's time limits come from the speed. The defaults are the benchmarks' robots: two
grippers, doors opened with full hands, two items carried, 0.5 m/s."""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from coteam.domain.validation import first_problem
from coteam.domain.world import HANDS


class RobotCapabilities(BaseModel):
    """One robot's body (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    grippers: int = Field(HANDS, ge=1, le=HANDS)  # hands that each hold one item
    open_needs_free_gripper: bool = False  # opening or closing a door takes a gripper that holds nothing
    carry_limit: int | None = Field(None, ge=1)  # items held at once (a payload limit); None: one per gripper
    speed_mps: float = Field(0.5, gt=0, allow_inf_nan=False)  # the speed it drives at (Nav2's usual top speed)

    @model_validator(mode="after")
    def _carry_within_grippers(self) -> RobotCapabilities:
        if self.carry_limit is not None and self.carry_limit > self.grippers:
            raise ValueError(f"carry_limit {self.carry_limit} exceeds the {self.grippers} gripper(s)")
        return self

    @property
    def holds(self) -> int:
        """How many items the robot may hold at once."""
        return self.grippers if self.carry_limit is None else self.carry_limit

    def travel_s(self, metres: float) -> float:
        """Seconds to drive ``metres`` at the robot's speed."""
        return metres / self.speed_mps


DEFAULT_CAPABILITIES = RobotCapabilities()


def team_capabilities(text: str) -> dict[str, RobotCapabilities]:
    """The team's bodies from their JSON form (robot -> capabilities, as the launch passes them to the nodes); a
    one-line ValueError when malformed. A robot left out has the defaults."""
    try:
        data = json.loads(text or "{}")
        if not isinstance(data, dict):
            raise ValueError("expected a mapping of robot names to capabilities")
        return {str(robot): RobotCapabilities.model_validate(body) for robot, body in data.items()}
    except ValidationError as exc:
        raise ValueError(f"capabilities: {first_problem(exc, schema=RobotCapabilities)}") from None
    except ValueError as exc:
        raise ValueError(f"capabilities: {exc}") from None


def capabilities_json(bodies: dict[str, RobotCapabilities]) -> str:
    """The JSON form :func:`team_capabilities` reads."""
    return json.dumps({robot: body.model_dump() for robot, body in bodies.items()}, sort_keys=True)

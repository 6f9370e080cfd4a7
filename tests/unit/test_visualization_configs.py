"""The shipped RViz2 config and Foxglove layout (config/rviz/team.rviz, config/foxglove/team.json) parse, look at the
map frame, and show only topics the team of config/team_twin.yaml publishes (its robots' names)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

CONFIG = Path(__file__).resolve().parents[2] / "config"
ROBOTS = [r["name"] for r in yaml.safe_load((CONFIG / "team_twin.yaml").read_text())["robots"]]
# what the twin team publishes (docs/ros2.md, "Nodes"): the twin's map and odometry, each robot's perception
# markers and planner decisions, the team's channels
PUBLISHED = {"/map", "/team/messages", "/team/intents"} | {
    f"/{robot}/{topic}" for robot in ROBOTS for topic in ("semantic_markers", "odom", "decision")
}


def _rviz_topics(node: object) -> set[str]:
    if isinstance(node, dict):
        topics = {node["Topic"]["Value"]} if isinstance(node.get("Topic"), dict) else set()
        return topics.union(*(_rviz_topics(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_rviz_topics(v) for v in node))
    return set()


def test_the_rviz_config_shows_the_teams_topics_in_the_map_frame() -> None:
    config = yaml.safe_load((CONFIG / "rviz" / "team.rviz").read_text())
    manager = config["Visualization Manager"]
    assert manager["Global Options"]["Fixed Frame"] == "map"
    topics = _rviz_topics(manager["Displays"])
    assert topics <= PUBLISHED, topics - PUBLISHED
    assert {f"/{robot}/semantic_markers" for robot in ROBOTS} <= topics
    classes = {d["Class"] for d in manager["Displays"]}
    assert {"rviz_default_plugins/Map", "rviz_default_plugins/TF", "rviz_default_plugins/MarkerArray"} <= classes


def test_the_foxglove_layout_shows_the_teams_topics() -> None:
    layout = json.loads((CONFIG / "foxglove" / "team.json").read_text())
    panels = layout["configById"]
    three_d = next(config for key, config in panels.items() if key.startswith("3D!"))
    assert three_d["followTf"] == "map"
    topics = set(three_d["topics"]) | {
        config["topicPath"].split(".")[0] for key, config in panels.items() if key.startswith("RawMessages!")
    }
    assert topics <= PUBLISHED, topics - PUBLISHED

    def leaves(node: object) -> set[str]:
        return {node} if isinstance(node, str) else leaves(node["first"]) | leaves(node["second"])

    assert leaves(layout["layout"]) == set(panels)  # every panel is placed, and only those

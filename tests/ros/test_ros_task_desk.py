"""The team's task node with a model reading people's sentences (``serve: {reader: llm}``): the node process, a chat
model on an OpenAI-compatible endpoint (a loopback one here), and `coteam task` as a person uses it. What the model
read is what is queued and shown, and its record says the model read it; no robots are needed for that."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ros_isolation import isolate_ros

pytest.importorskip("rclpy")

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 90


def _coteam(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "coteam.cli", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def _wait_for(log: Path, text: str, node: subprocess.Popen) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while text not in log.read_text():
        assert node.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.2)


def test_a_task_node_with_a_model_reader_queues_what_the_model_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from coteam.domain.scene_io import save_scene
    from coteam.home.world_file import load_world
    from coteam_testkit.llm_server import LoopbackOpenAIServer

    isolate_ros(tmp_path, monkeypatch)
    monkeypatch.setenv("OPENAI_API_KEY", "not-needed-by-the-loopback-server")
    save_scene(load_world(ROOT / "config" / "flat.world.yaml").scene, tmp_path / "scene.json")
    records, log = tmp_path / "tasks.jsonl", tmp_path / "desk.log"
    reading = {"goals": [{"item": "apple", "target": "fridge", "count": 2}], "refuse": ""}
    with LoopbackOpenAIServer(lambda request: json.dumps(reading)) as server, log.open("w") as sink:
        params = {
            "scene_path": str(tmp_path / "scene.json"),
            "robots": "[robot1, robot2]",
            "first_task": "false",
            "reader": "llm",
            "llm_base_url": server.base_url,
            "llm_model": "loopback-model",
            "results_path": str(records),
        }
        argv = [sys.executable, "-m", "coteam_ros.nodes.task_desk", "--ros-args"]
        for key, value in params.items():
            argv += ["-p", f"{key}:={value}"]
        node = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT, text=True)
        try:
            _wait_for(log, "task desk for robot1, robot2: /team/task (reader: llm)", node)
            person = _coteam("task", "fill the fridge with the apples")  # the grammar has no "fill"
            _wait_for(log, "task-1 starts: in(apple, fridge): 2", node)
            status = _coteam("task", "--status").communicate(timeout=TIMEOUT_S)[0]
            canceled = _coteam("task", "--cancel").communicate(timeout=TIMEOUT_S)[0]
            said = person.communicate(timeout=TIMEOUT_S)[0]
            prompt = server.requests[0]["messages"][-1]["content"]
        finally:
            node.send_signal(signal.SIGINT)
            code = node.wait(timeout=30)
    assert "fill the fridge with the apples" in prompt
    assert "task-1" in status and "in(apple, fridge): 2" in status, status
    assert person.returncode == 6 and "task-1: canceled" in said, (canceled, said)
    (record,) = [json.loads(line) for line in records.read_text().splitlines()]
    assert record["read_by"] == "llm" and record["goal"] == ["in(apple, fridge): 2"], record
    assert code == 0, log.read_text()[-3000:]

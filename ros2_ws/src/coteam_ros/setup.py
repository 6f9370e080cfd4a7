"""coteam_ros: builds with colcon (ament_python) on an apt-installed ROS 2 and with
``pip install -e ros2_ws/src/coteam_ros`` into the repository's venv (ROS 2 from PyPI wheels)."""

from glob import glob

from setuptools import find_packages, setup

PACKAGE = "coteam_ros"
NODES = (
    "sim_bridge",
    "twin",
    "coordinator",
    "robot_state",
    "perception",
    "planner",
    "relay",
    "executor",
    "task_desk",
)

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*"]),
    package_data={PACKAGE: ["dds/*.xml"]},
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", sorted(glob("launch/*.launch.py"))),
    ],
    # rclpy, the messages, launch and the coteam core come from ROS 2 (apt or the ros-* wheels) and from
    # `pip install -e .` at the repository root; they are not pip requirements of this package.
    install_requires=["setuptools"],
    zip_safe=True,
    maintainer="coteam maintainers",
    maintainer_email="coteam@example.com",
    description="ROS 2 nodes, YAML loader, launcher and launch files of coteam",
    license="Apache-2.0",
    python_requires=">=3.10",
    entry_points={
        # a composed robot's nodes in one process (`composed: true` in the team file)
        "console_scripts": [f"{node} = {PACKAGE}.nodes.{node}:main" for node in NODES]
        + [f"composed = {PACKAGE}.composed:main"],
        # `coteam launch ...` (the `coteam` command collects subcommands from this group)
        "coteam.commands": [f"ros = {PACKAGE}.cli:register"],
    },
)

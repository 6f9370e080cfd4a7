"""The QoS profiles of coteam's topics, written once for every node.

* ``LATCHED``: the latest value, kept for a node that joins late (a robot's status, its step tick, ``/map``, the
  semantic map).
* ``STREAM``: a reliable stream nobody needs the past of (odometry, ``/clock``).
* ``SENSOR``: subscribing to detections (``vision_msgs/Detection3DArray``): best effort, as ROS 2 sensor data
  (rclpy's ``qos_profile_sensor_data``), so any detector's publisher matches, reliable or not; a lost batch is
  replaced by the next. coteam publishes its own detections reliable (``STREAM``), which every subscriber matches.
* ``TEAM_MESSAGES``: ``/team/messages``; a late-joining teammate still gets the recent past (the inbox drops what
  it has already seen).
* ``DECISIONS``: a planner's decisions, kept like team messages (the same profile): the first decision of an
  episode is made as soon as the planner hears the bridge's first status, which can be before the planner has
  discovered the bridge's ``decision`` subscription; a volatile topic lost it, and the run's trace missed one.
* ``TURNS``: a centralised team's exchange between its coordinator and the robots' planners (``turn_report``,
  ``turn_command``): reliable, and kept for a node that matches late (a planner reports step 0 as soon as it hears
  the bridge, possibly before it has discovered the coordinator); receivers ignore what they have seen (by step and
  sequence number).
* ``HEARTBEATS``: ``/team/heartbeat`` (``coteam_ros.heartbeat``): best effort, as a sensor stream (a lost beat is
  replaced by the next); the depth keeps a beat of every teammate of a large team between two reads.
* ``CAMERA``: a step's camera views are a burst (six per robot in C-WAH): the writer keeps several steps of them
  until they are read. The simulator publishes them so, and a lockstep robot's perception subscribes so.
* ``CAMERA_DRIVER``: subscribing to a camera driver (hardware, the twin): best effort, as ``SENSOR``, so any driver's
  publisher matches (a reliable subscription does not match a best-effort camera); a lost frame is replaced by the
  next.

The TF topics use tf2_ros's own profiles (``coteam_ros.tf``).

Topics between coteam's own nodes (a robot's status and step tick, decisions, a centralised team's turns, team
messages, intents and heartbeats) take :func:`own_publisher` / :func:`own_subscription` as their event callbacks: both
ends take their profile from this module, so their QoS cannot be incompatible, and rclpy's two default event handlers
per publisher and per subscription (each in the executor's wait set at every wake) would only cost time -- about a
third of a lockstep node's executor time. Topics other software reads or writes (odometry, detections, cameras, TF,
the map, markers) keep them: a mismatch there is said.
"""

from __future__ import annotations

from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
STREAM = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)
TEAM_MESSAGES = QoSProfile(
    depth=100, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL
)
DECISIONS = TEAM_MESSAGES
TURNS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
SENSOR = QoSProfile(depth=5, reliability=ReliabilityPolicy.BEST_EFFORT, durability=DurabilityPolicy.VOLATILE)
CAMERA = QoSProfile(depth=30, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)
CAMERA_DRIVER = QoSProfile(depth=30, reliability=ReliabilityPolicy.BEST_EFFORT, durability=DurabilityPolicy.VOLATILE)
HEARTBEATS = QoSProfile(depth=20, reliability=ReliabilityPolicy.BEST_EFFORT, durability=DurabilityPolicy.VOLATILE)


def own_publisher() -> PublisherEventCallbacks:
    """The event callbacks of a publisher on a topic between coteam's own nodes: none (see the module docstring)."""
    return PublisherEventCallbacks(use_default_callbacks=False)


def own_subscription() -> SubscriptionEventCallbacks:
    """The event callbacks of a subscription to a topic between coteam's own nodes: none."""
    return SubscriptionEventCallbacks(use_default_callbacks=False)

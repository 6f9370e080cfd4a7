"""Step tracing for the lockstep benchmark (``bench/ros_team.py``): loaded by every node process whose ``PYTHONPATH``
starts with this folder, it does nothing unless ``COTEAM_STEP_TRACE`` names a folder. Then it records, from outside
the node's code (rclpy patched at start-up, so any checkout's nodes are traced alike):

* every callback the node's executor runs (``cb``): when its wait began (``t0``), when it was ready (``t1``), when it
  ended (``t2``), the CPU it took, what ran it (``sub:<topic>``, ``as:``/``ac:<action>/<parts>`` for an action server's
  or client's goal, result, feedback, ..., ``timer``, ``task``) and the ``step`` of the message it took, if any; and
  the CPU the executor spent before it, building its wait set (``wait_cpu``);
* every publication (``pub``: topic, ``step`` of the message, when, its duration) and action feedback sent (``fb``);
  a goal sent (``pub`` on ``as:<action>/goal``) and a goal answered (``pub`` on ``ac:<action>/goal``).

Records (JSON lines) go to ``$COTEAM_STEP_TRACE/<node>@<robot>-<pid>.jsonl``; times are ``time.monotonic()``, one
clock for every process of the machine. ``bench/lockstep_trace.py`` reads them. With ``COTEAM_STEP_PROFILE`` set too,
each process also leaves a CPU profile (``cProfile``, ``.prof``) there.
"""

from __future__ import annotations

import os

if os.environ.get("COTEAM_STEP_TRACE"):
    import atexit
    import json
    import sys
    import time

    _folder = os.environ["COTEAM_STEP_TRACE"]
    _records: list[str] = []
    _current: dict[str, object] = {"step": None, "part": None}
    _argv = list(getattr(sys, "orig_argv", sys.argv))
    _module = _argv[_argv.index("-m") + 1] if "-m" in _argv[:-1] else ""
    _namespace = next((a.split(":=", 1)[1] for a in _argv if a.startswith("__ns:=")), "/")
    _name = f"{_module.rsplit('.', 1)[-1]}@{_namespace.strip('/')}-{os.getpid()}" if _module else ""

    def _flush() -> None:
        if _records and _name:
            with open(os.path.join(_folder, f"{_name}.jsonl"), "a") as out:
                out.write("\n".join(_records) + "\n")
        _records.clear()

    def _record(**fields: object) -> None:
        _records.append(json.dumps(fields))
        if len(_records) >= 5000:
            _flush()

    atexit.register(_flush)

    def _step_of(message: object) -> object:
        step = getattr(message, "step", None)
        if step is None:
            step = getattr(getattr(message, "feedback", None), "step", None)
        return step if isinstance(step, int) else None

    def _label(entity: object) -> str:
        for attribute, kind in (("topic_name", "sub"), ("srv_name", "srv")):
            name = getattr(entity, attribute, None)
            if isinstance(name, str):
                return f"{kind}:{name}"
        name = getattr(entity, "_trace_name", None)
        if name:
            return name
        return "task" if entity is None else type(entity).__name__.lower()

    def _install() -> None:
        import rclpy.executors as executors
        import rclpy.node as node_module
        import rclpy.publisher as publisher_module
        from rclpy.action import client as action_client
        from rclpy.action import server as action_server

        quiet = (executors.ShutdownException, executors.TimeoutException, executors.ConditionReachedException)

        def _spin_once_impl(self, timeout_sec=None, wait_condition=lambda: False):  # type: ignore[no-untyped-def]
            t0, c0 = time.monotonic(), time.process_time()
            try:
                handler, entity, _ = self.wait_for_ready_callbacks(timeout_sec, None, wait_condition)
            except quiet:
                _record(k="wait_cpu", cpu=time.process_time() - c0, t=t0)
                return
            t1, c1 = time.monotonic(), time.process_time()
            _current["step"] = _current["part"] = None
            try:
                handler()
            finally:
                part = _current["part"]
                _record(
                    k="cb",
                    what=_label(entity) + (f"/{part}" if part else ""),
                    step=_current["step"],
                    t0=t0,
                    t1=t1,
                    t2=time.monotonic(),
                    cpu=time.process_time() - c1,
                    c1=c1,
                    wait_cpu=c1 - c0,
                )
            exception = handler.exception()
            if exception is not None:
                raise exception
            handler.result()

        executors.SingleThreadedExecutor._spin_once_impl = _spin_once_impl

        create_subscription = node_module.Node.create_subscription

        def traced_subscription(self, msg_type, topic, callback, *args, **kwargs):  # type: ignore[no-untyped-def]
            def traced(message):  # type: ignore[no-untyped-def]
                _current["step"] = _step_of(message)
                return callback(message)

            return create_subscription(self, msg_type, topic, traced, *args, **kwargs)

        node_module.Node.create_subscription = traced_subscription

        publish = publisher_module.Publisher.publish

        def traced_publish(self, message):  # type: ignore[no-untyped-def]
            t0 = time.monotonic()
            publish(self, message)
            t = time.monotonic()
            _record(k="pub", topic=self.topic_name, step=_step_of(message), t=t0, d=t - t0, c=time.process_time())

        publisher_module.Publisher.publish = traced_publish

        publish_feedback = action_server.ServerGoalHandle.publish_feedback

        def traced_feedback(self, feedback):  # type: ignore[no-untyped-def]
            t0 = time.monotonic()
            publish_feedback(self, feedback)
            name = getattr(self._action_server, "_trace_name", "")
            _record(k="fb", topic=name, step=_step_of(feedback), t=t0, d=time.monotonic() - t0)

        action_server.ServerGoalHandle.publish_feedback = traced_feedback

        for klass, kind in ((action_server.ActionServer, "as"), (action_client.ActionClient, "ac")):

            def init(self, node, action_type, action_name, *args, _init=klass.__init__, _kind=kind, **kwargs):  # type: ignore[no-untyped-def]
                _init(self, node, action_type, action_name, *args, **kwargs)
                self._trace_name = f"{_kind}:{node.get_namespace().rstrip('/')}/{action_name.lstrip('/')}"

            async def execute(self, taken_data, _execute=klass.execute):  # type: ignore[no-untyped-def]
                if isinstance(taken_data, dict):
                    _current["part"] = "+".join(sorted(taken_data))
                    if "feedback" in taken_data:
                        _current["step"] = _step_of(taken_data["feedback"])
                result = await _execute(self, taken_data)
                served = isinstance(self, action_server.ActionServer) and isinstance(taken_data, dict)
                if served and "goal" in taken_data:  # its answer has gone out (after the accepted callback too)
                    answered = self._trace_name.replace("as:", "ac:") + "/goal"
                    _record(k="pub", topic=answered, step=None, t=time.monotonic(), d=0.0)
                return result

            klass.__init__ = init
            klass.execute = execute

        send_goal_async = action_client.ActionClient.send_goal_async

        def traced_send_goal(self, goal, *args, **kwargs):  # type: ignore[no-untyped-def]
            t0 = time.monotonic()
            future = send_goal_async(self, goal, *args, **kwargs)
            topic = self._trace_name.replace("ac:", "as:") + "/goal"
            _record(k="pub", topic=topic, step=_step_of(goal), t=t0, d=time.monotonic() - t0)
            return future

        action_client.ActionClient.send_goal_async = traced_send_goal

    if _name:
        os.makedirs(_folder, exist_ok=True)
        _install()
        if os.environ.get("COTEAM_STEP_PROFILE"):
            import cProfile

            _profile = cProfile.Profile(time.process_time)
            _profile.enable()

            def _dump_profile() -> None:
                _profile.disable()
                _profile.dump_stats(os.path.join(_folder, f"{_name}.prof"))

            atexit.register(_dump_profile)

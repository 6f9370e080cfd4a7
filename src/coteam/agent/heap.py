"""The process's heap once a robot's reasoning is set up, kept out of the garbage collector's way.

CPython's cyclic collector now and then scans every container object the process holds. After start-up those are
mostly modules, classes, pydantic schemas, rclpy's and the method's own objects: about 100,000 that live as long as
the process. On this project's 2-core machine such a full collection took 25-80 ms, and it fell inside whichever
decision was running: the worst decisions of a TDW-MAT episode were three times its 95th percentile
(docs/benchmarks.md, "Time per decision"). :func:`settle_heap` moves what is alive then out of the collector's
sight (:func:`gc.freeze`, meant for this). Later collections scan only what decisions and episodes made since.

A decision must also free its own objects by reference counting: a reference cycle (a nested function that calls
itself, say) keeps a decision's value model and particles alive until a full collection, which then frees them
inside a later decision. ``tests/sim/test_decision_heap.py`` holds every method to that.
"""

from __future__ import annotations

import gc


def settle_heap() -> None:
    """Collect what is garbage now, then freeze the rest: call it once a process has built its team or nodes,
    before the first decision. Objects alive now are never collected as cycles later (they are still freed when
    their last reference goes), so call it when what is alive is meant to live on, not between episodes."""
    gc.collect()
    gc.freeze()

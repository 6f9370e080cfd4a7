"""Reasoning methods of the papers. Importing this package registers them in :mod:`coteam.reasoning`."""

from coteam.methods import pce  # noqa: F401  (registration side effect)

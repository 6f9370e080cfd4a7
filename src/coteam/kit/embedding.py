"""Local text embedders for similarity retrieval: no download, no network, the same vectors on every machine.

The default, ``hashing``, embeds a text as a bag of its words and word pairs, each token hashed (BLAKE2b, so the
same on every run and machine) to one of ``dim`` signed dimensions, weighted ``1 + log(count)``, the vector scaled
to unit length. Cosine similarity of two such vectors is then the share of weighted tokens the texts have in common.

Why not a neural sentence encoder: it needs a model download and a deep-learning runtime, which offline robots and
CI do not have, and the texts compared here are the stack's own summaries of observations and joint actions (a
small, fixed vocabulary of verbs, object names and rooms), where the words two texts share are what similarity
means. Another embedder plugs in by name: ``package.module:factory`` is called with no arguments and must return an
object with ``name``, ``dim`` and ``embed`` (:class:`TextEmbedder`).
"""

from __future__ import annotations

import hashlib
import importlib
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Protocol, runtime_checkable

import numpy as np

_WORD = re.compile(r"[a-z0-9_]+")


@runtime_checkable
class TextEmbedder(Protocol):
    """Turns texts into vectors; rows of unit length, or zero for a text with nothing to embed."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def tokens(text: str) -> list[str]:
    """The words of ``text`` (lower case, letters, digits and underscores) and each pair of neighbouring words."""
    words = _WORD.findall(text.lower())
    return words + [f"{a} {b}" for a, b in pairwise(words)]


@dataclass(frozen=True)
class HashingEmbedder:
    """Feature hashing of words and word pairs (module docstring)."""

    dim: int = 256

    @property
    def name(self) -> str:
        return f"hashing-{self.dim}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for token, count in Counter(tokens(text)).items():
                h = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "little")
                out[row, h % self.dim] += (1.0 if h >> 63 else -1.0) * (1.0 + math.log(count))
            norm = float(np.linalg.norm(out[row]))
            if norm > 0:
                out[row] /= norm
        return out


def make_embedder(spec: str) -> TextEmbedder:
    """``hashing`` (256 dimensions), ``hashing-N`` or ``package.module:factory``; ValueError in one line else."""
    if spec == "hashing":
        return HashingEmbedder()
    if m := re.fullmatch(r"hashing-(\d+)", spec):
        dim = int(m.group(1))
        if not 16 <= dim <= 65536:
            raise ValueError(f"embedder {spec!r}: the dimension must be between 16 and 65536")
        return HashingEmbedder(dim)
    module, sep, attr = spec.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"embedder {spec!r}: expected 'hashing', 'hashing-N' or 'package.module:factory'")
    try:
        factory = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"embedder {spec!r} cannot be loaded: {exc}") from None
    try:
        embedder = factory()
    except Exception as exc:  # a plug-in's own error, whatever it is, becomes the one line
        raise ValueError(f"embedder {spec!r} failed to start: {type(exc).__name__}: {exc}") from None
    if not isinstance(embedder, TextEmbedder):
        raise ValueError(f"embedder {spec!r} returned {type(embedder).__name__}, which has no name, dim and embed")
    return embedder


def top_k(query: np.ndarray, matrix: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The ``k`` rows of ``matrix`` most similar to ``query`` (cosine of unit vectors), best first, ties in row
    order, with their similarity."""
    if k <= 0 or len(matrix) == 0:
        return []
    scores = matrix @ query
    order = np.argsort(-scores, kind="stable")[:k]
    return [(int(i), float(scores[i])) for i in order]

"""The local text embedder behind experience retrieval: the same vectors everywhere, similar texts nearer, a
pluggable factory, and one-line errors for a bad name."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from coteam.kit.embedding import HashingEmbedder, TextEmbedder, make_embedder, tokens, top_k


def test_tokens_are_words_and_neighbouring_pairs():
    assert tokens("Grab <apple> (21)!") == ["grab", "apple", "21", "grab apple", "apple 21"]
    assert tokens("") == []


def test_vectors_are_unit_length_or_zero_and_the_same_in_another_process():
    e = HashingEmbedder(64)
    vectors = e.embed(["alice grabs the apple in the kitchen", "", "!!!"])
    assert vectors.shape == (3, 64) and vectors.dtype == np.float32
    assert np.linalg.norm(vectors[0]) == pytest.approx(1.0)
    assert not vectors[1].any() and not vectors[2].any()
    code = (
        "from coteam.kit.embedding import HashingEmbedder; "
        "print(HashingEmbedder(64).embed(['alice grabs the apple in the kitchen'])[0].tolist())"
    )
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert np.allclose(eval(other), vectors[0])  # hashing does not depend on PYTHONHASHSEED


def test_similar_texts_are_nearer_and_top_k_is_best_first_with_ties_in_order():
    e = make_embedder("hashing")
    assert isinstance(e, TextEmbedder) and e.name == "hashing-256"
    memory = e.embed(
        [
            "bob grab apple kitchen failed object taken",
            "alice open fridge kitchen",
            "bob grab apple kitchen failed object taken",
            "alice explore bedroom",
        ]
    )
    query = e.embed(["alice grab apple kitchen failed object taken"])[0]
    hits = top_k(query, memory, 3)
    assert [i for i, _ in hits] == [0, 2, 1]
    assert hits[0][1] == pytest.approx(hits[1][1]) and hits[0][1] > hits[2][1] > 0
    assert top_k(query, memory[:0], 5) == [] and top_k(query, memory, 0) == []


def factory() -> HashingEmbedder:
    return HashingEmbedder(32)


def test_an_embedder_plugs_in_by_module_and_factory():
    assert make_embedder("test_embedding:factory").dim == 32
    assert make_embedder("hashing-512").name == "hashing-512"


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ("word2vec", "expected 'hashing', 'hashing-N' or 'package.module:factory'"),
        ("hashing-4", "the dimension must be between 16 and 65536"),
        ("no_such_module_here:make", "cannot be loaded: No module named 'no_such_module_here'"),
        ("types:SimpleNamespace", "returned SimpleNamespace, which has no name, dim and embed"),
        ("json:dumps", "failed to start: TypeError"),
    ],
)
def test_a_bad_embedder_is_one_line(spec, error):
    with pytest.raises(ValueError, match=error) as info:
        make_embedder(spec)
    assert "\n" not in str(info.value)

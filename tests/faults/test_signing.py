"""Signed team messages: a message is believed only when the named sender signed exactly it, and its sequence
number is new; forged senders, tampered texts, replays and strangers are refused with a reason."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from coteam.home.signing import (
    PUBLIC_KEYS,
    Envelope,
    KeystoreError,
    Signer,
    Verifier,
    init_keystore,
    load_private_key,
    load_public_keys,
    robot_keys,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def team(tmp_path: Path):
    pub = init_keystore(tmp_path / "keys", ["alice", "bob"])
    signers = {r: Signer(r, load_private_key(tmp_path / "keys" / f"{r}.key")) for r in ("alice", "bob")}
    return signers, Verifier(load_public_keys(pub))


def test_a_genuine_message_is_believed_once(team):
    signers, verifier = team
    env = signers["bob"].sign("", 12, "the apple is in the fridge", '{"agent": "bob"}')
    assert verifier.check("bob", "", 12, "the apple is in the fridge", '{"agent": "bob"}', env) is None
    assert "a replay" in verifier.check("bob", "", 12, "the apple is in the fridge", '{"agent": "bob"}', env)
    later = signers["bob"].sign("", 13, "I have it")
    assert verifier.check("bob", "", 13, "I have it", "", later) is None


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"text": "the apple is in the bathroom"}, "not bob's"),  # tampered in transit
        ({"step": 13}, "not bob's"),
        ({"payload": '{"agent": "bob", "intent": "x"}'}, "not bob's"),
        ({"receiver": "alice"}, "not bob's"),
    ],
)
def test_any_change_to_a_signed_message_breaks_its_signature(team, change, why):
    signers, verifier = team
    fields = {"receiver": "", "step": 12, "text": "the apple is in the fridge", "payload": ""}
    env = signers["bob"].sign(fields["receiver"], fields["step"], fields["text"], fields["payload"])
    assert why in verifier.check("bob", **{**fields, **change}, envelope=env)


def test_forged_senders_strangers_and_garbage_are_refused(team):
    signers, verifier = team
    env = signers["alice"].sign("", 5, "I am bob")  # alice's key, bob's name
    assert "not bob's" in verifier.check("bob", "", 5, "I am bob", "", env)
    assert "no public key for 'mallory'" in verifier.check("mallory", "", 5, "hi", "", env)
    assert "not bob's" in verifier.check("bob", "", 5, "hi", "", Envelope(10**18, "not base64!"))


def test_a_restarted_robot_keeps_counting_up(tmp_path: Path):
    pub = init_keystore(tmp_path, ["bob"])
    verifier = Verifier(load_public_keys(pub))
    first = Signer("bob", load_private_key(tmp_path / "bob.key")).sign("", 1, "before the restart")
    assert verifier.check("bob", "", 1, "before the restart", "", first) is None
    again = Signer("bob", load_private_key(tmp_path / "bob.key")).sign("", 2, "after it")
    assert verifier.check("bob", "", 2, "after it", "", again) is None


def test_a_recording_of_an_earlier_run_is_refused_by_its_age(tmp_path: Path):
    pub = init_keystore(tmp_path, ["bob"])
    now = {"us": 1_000_000_000_000}
    clock = lambda: now["us"]  # noqa: E731
    bob = Signer("bob", load_private_key(tmp_path / "bob.key"), now_us=clock)
    recorded = bob.sign("", 7, "the apple is in the fridge")
    now["us"] += 121 * 1_000_000  # two minutes later a new run starts; its receiver has not heard bob yet
    fresh = Verifier(load_public_keys(pub), max_age_s=120, now_us=clock)
    assert "sent 121 s ago" in fresh.check("bob", "", 7, "the apple is in the fridge", "", recorded)
    assert fresh.check("bob", "", 8, "still here", "", bob.sign("", 8, "still here")) is None


def test_sequence_numbers_go_up_within_one_microsecond(tmp_path: Path):
    init_keystore(tmp_path, ["bob"])
    bob = Signer("bob", load_private_key(tmp_path / "bob.key"), now_us=lambda: 42)
    assert [bob.sign("", 1, str(k)).seq for k in range(3)] == [42, 43, 44]


def test_a_robot_loads_only_its_own_key_of_the_team(tmp_path: Path):
    pub = init_keystore(tmp_path, ["alice", "bob"])
    signer, verifier = robot_keys("alice", tmp_path / "alice.key", pub)
    assert signer.sender == "alice" and set(verifier.public_keys) == {"alice", "bob"}
    with pytest.raises(KeystoreError, match=r"bob\.key: not the key .* names for 'alice'"):
        robot_keys("alice", tmp_path / "bob.key", pub)
    with pytest.raises(KeystoreError, match="no public key for 'carol'"):
        robot_keys("carol", tmp_path / "alice.key", pub)
    with pytest.raises(KeystoreError, match=r"carol\.key: cannot read the key"):
        robot_keys("carol", tmp_path / "carol.key", pub)


def test_the_keystore_keeps_keys_private_and_existing_keys_unless_forced(tmp_path: Path):
    init_keystore(tmp_path, ["alice", "bob"])
    key = tmp_path / "alice.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    before = key.read_bytes()
    init_keystore(tmp_path, ["alice", "bob", "carol"])
    assert key.read_bytes() == before and set(json.loads((tmp_path / PUBLIC_KEYS).read_text())) == {
        "alice",
        "bob",
        "carol",
    }
    init_keystore(tmp_path, ["alice"], force=True)
    assert key.read_bytes() != before
    (tmp_path / "bad.key").write_text("-----BEGIN PRIVATE KEY-----\ngarbage\n")
    with pytest.raises(KeystoreError, match=r"bad\.key: not a private key"):
        load_private_key(tmp_path / "bad.key")
    (tmp_path / "bad.json").write_text('{"bob": "AAAA"}')
    with pytest.raises(KeystoreError, match=r"bad\.json: not a team's public keys"):
        load_public_keys(tmp_path / "bad.json")


def test_coteam_keys_init_makes_one_key_per_robot_of_the_team_file(tmp_path: Path):
    proc = subprocess.run(
        [sys.executable, "-m", "coteam.cli", "keys", "init", str(ROOT / "config" / "team_sim.yaml"), "--dir",
         str(tmp_path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "alice:" in proc.stdout and "bob:" in proc.stdout and PUBLIC_KEYS in proc.stdout
    assert set(load_public_keys(tmp_path / PUBLIC_KEYS)) == {"alice", "bob", "operator"}  # operator: coteam tell

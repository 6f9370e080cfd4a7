"""Signed team messages: each robot signs what it sends with its own Ed25519 key (``cryptography``), and a receiver
believes a message only when the signature is the named sender's and its sequence number is new.

A **keystore** is a directory made once per team (``coteam keys init TEAM.yaml``): ``<robot>.key`` holds a robot's
private key (PEM, PKCS #8, readable by its owner only) and ``team.pub.json`` every robot's public key (raw 32 bytes,
base64). A robot needs its own key and the team's public keys; nothing else is secret.

What is signed is the message's canonical bytes: sender, receiver, step, sequence number, text and payload, as a
JSON array. The sequence number is the send time in microseconds since the epoch, made strictly increasing per
sender (a second message in the same microsecond takes the next number), so a restarted robot keeps going up. A
:class:`Verifier` remembers the last number it accepted from each sender: an older or repeated one is a replay. A
message sent more than ``max_age_s`` before it is checked is refused too: that is a recording of an earlier run
replayed to a receiver that has not heard the sender yet (or clocks apart by more than that; robots of a team keep
their clocks in sync, e.g. with NTP / chrony).
"""

from __future__ import annotations

import base64
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

PUBLIC_KEYS = "team.pub.json"
DEFAULT_MAX_AGE_S = 120.0


def _wall_clock_us() -> int:
    return time.time_ns() // 1000


class KeystoreError(ValueError):
    """A keystore that cannot be made or read; the message names the file."""


@dataclass(frozen=True)
class Envelope:
    """What a message carries besides its text to prove who sent it."""

    seq: int
    signature: str  # base64 of the 64-byte Ed25519 signature


def canonical(sender: str, receiver: str, step: int, seq: int, text: str, payload: str) -> bytes:
    """The bytes a signature covers."""
    return json.dumps([sender, receiver, step, seq, text, payload], ensure_ascii=False, separators=(",", ":")).encode()


def init_keystore(directory: str | Path, robots: Iterable[str], *, force: bool = False) -> Path:
    """Make one key per robot in ``directory`` and the team's public-key file; an existing key is kept unless
    ``force``. Returns the public-key file."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    public: dict[str, str] = {}
    for robot in robots:
        path = out / f"{robot}.key"
        if path.exists() and not force:
            key = load_private_key(path)
        else:
            key = Ed25519PrivateKey.generate()
            pem = key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(pem)
        raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        public[robot] = base64.b64encode(raw).decode()
    pub = out / PUBLIC_KEYS
    pub.write_text(json.dumps(public, indent=1, sort_keys=True) + "\n")
    return pub


def load_private_key(path: str | Path) -> Ed25519PrivateKey:
    try:
        pem = Path(path).read_bytes()
    except OSError as exc:
        raise KeystoreError(f"{path}: cannot read the key ({exc.strerror}; make it with `coteam keys init`)") from None
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        raise KeystoreError(f"{path}: not a private key ({exc})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise KeystoreError(f"{path}: not an Ed25519 key")
    return key


def load_public_keys(path: str | Path) -> dict[str, Ed25519PublicKey]:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise KeystoreError(f"{path}: cannot read the team's public keys ({exc.strerror})") from None
    try:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("expected a mapping of robot names to keys")
        return {str(k): Ed25519PublicKey.from_public_bytes(base64.b64decode(v, validate=True)) for k, v in data.items()}
    except (ValueError, TypeError) as exc:
        raise KeystoreError(f"{path}: not a team's public keys ({exc})") from None


class Signer:
    """Signs one robot's messages (see the module docstring)."""

    def __init__(self, sender: str, key: Ed25519PrivateKey, now_us: Callable[[], int] = _wall_clock_us):
        self.sender = sender
        self._key = key
        self._seq = 0
        self._now_us = now_us

    def sign(self, receiver: str, step: int, text: str, payload: str = "") -> Envelope:
        self._seq = max(self._seq + 1, self._now_us())
        signature = self._key.sign(canonical(self.sender, receiver, step, self._seq, text, payload))
        return Envelope(self._seq, base64.b64encode(signature).decode())


class Verifier:
    """Checks teammates' messages against the team's public keys, and refuses replays."""

    def __init__(
        self,
        public_keys: Mapping[str, Ed25519PublicKey],
        max_age_s: float = DEFAULT_MAX_AGE_S,
        now_us: Callable[[], int] = _wall_clock_us,
    ):
        self.public_keys = dict(public_keys)
        self.max_age_s = max_age_s
        self.last_seq: dict[str, int] = {}
        self._now_us = now_us

    def check(self, sender: str, receiver: str, step: int, text: str, payload: str, envelope: Envelope) -> str | None:
        """Why the message is not to be believed (None: it is genuine and new; its number is remembered)."""
        key = self.public_keys.get(sender)
        if key is None:
            return f"no public key for {sender!r} in the team's keystore"
        try:
            signature = base64.b64decode(envelope.signature, validate=True)
            key.verify(signature, canonical(sender, receiver, step, envelope.seq, text, payload))
        except (InvalidSignature, ValueError):
            return f"the signature is not {sender}'s"
        if envelope.seq <= self.last_seq.get(sender, 0):
            return f"sequence number {envelope.seq} is not newer than {self.last_seq[sender]}: a replay"
        age_s = (self._now_us() - envelope.seq) / 1e6
        if age_s > self.max_age_s:
            return f"sent {age_s:.0f} s ago (more than {self.max_age_s:g} s): a replay, or clocks out of sync"
        self.last_seq[sender] = envelope.seq
        return None


def robot_keys(
    robot: str, private_key: str | Path, public_keys: str | Path, max_age_s: float = DEFAULT_MAX_AGE_S
) -> tuple[Signer, Verifier]:
    """One robot's signer and its verifier of the team, from its key file and the team's public keys; the key must
    be the one the team knows for ``robot``."""
    key = load_private_key(private_key)
    team = load_public_keys(public_keys)
    mine = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    known = team.get(robot)
    if known is None:
        raise KeystoreError(f"{public_keys}: no public key for {robot!r} (run `coteam keys init` for the team)")
    if known.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw) != mine:
        raise KeystoreError(f"{private_key}: not the key {public_keys} names for {robot!r}")
    return Signer(robot, key), Verifier(team, max_age_s)

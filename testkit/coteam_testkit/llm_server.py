"""A loopback OpenAI-compatible chat server with real HTTP, for tests and benchmarks.

It binds 127.0.0.1 on a free port and serves, on daemon threads:

* ``POST /v1/chat/completions``: a ``chat.completion`` JSON whose reply is the next of ``responses`` (a list is
  served in order and its last item repeated once exhausted), or ``responses(request_body)`` for a callable, or —
  with ``responses=None`` — an echo of the last user message. Usage is deterministic:
  ``prompt_tokens = estimate_tokens(the message contents joined by newlines)`` and
  ``completion_tokens = estimate_tokens(reply)`` unless a ``usage`` function ``(request, reply) -> (p, c)`` is
  given. ``omit_usage=True`` leaves the ``usage`` field out. ``formats`` (a set of ``response_format`` kinds:
  ``json_schema``, ``json_object_schema``, ``json_object``) makes the server reject any other ``response_format``
  with HTTP 400 naming it, as servers without structured output do; ``None`` accepts every one.
  ``fail_first=N`` answers the first N requests with HTTP ``fail_status`` (an OpenAI-style error body);
  ``delay_s`` sleeps before each answer (timeout tests).
* ``GET /v1/models``: lists ``model``.

``requests`` holds every chat request body received (failed ones included), ``usages`` the usage dicts sent.

:class:`BrokenEndpoint` is an endpoint that is down in one of the ways real ones go down: ``silent`` (accepts
connections and never answers: a hung server), ``hangs_up`` (reads each request and closes the connection) or
``refused`` (nothing listens on the port).
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from coteam.llm.accounting import estimate_tokens

Responder = list[str] | Callable[[dict[str, Any]], str] | None
UsageFn = Callable[[dict[str, Any], str], tuple[int, int]]

_ERROR_TYPES = {429: "rate_limit_exceeded", 500: "server_error", 502: "bad_gateway", 503: "service_unavailable"}


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (timeout tests) closes its socket before the reply: not worth a traceback.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _default_usage(request: dict[str, Any], reply: str) -> tuple[int, int]:
    prompt = "\n".join(str(m.get("content") or "") for m in request.get("messages", []))
    return estimate_tokens(prompt), estimate_tokens(reply)


class LoopbackOpenAIServer:
    def __init__(
        self,
        responses: Responder = None,
        *,
        omit_usage: bool = False,
        fail_first: int = 0,
        fail_status: int = 429,
        model: str = "loopback-model",
        usage: UsageFn | None = None,
        delay_s: float = 0.0,
        formats: set[str] | None = None,
    ):
        if isinstance(responses, list) and not responses:
            raise ValueError("responses must not be an empty list")
        self.responses = responses
        self.omit_usage = omit_usage
        self.fail_first = fail_first
        self.fail_status = fail_status
        self.model = model
        self.usage_fn = usage or _default_usage
        self.delay_s = delay_s
        self.formats = formats
        self.requests: list[dict[str, Any]] = []
        self.usages: list[dict[str, int]] = []
        self.replies: list[str] = []
        self.failures = 0
        self._lock = threading.Lock()
        self._served = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._port: int | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------------------------
    def start(self) -> LoopbackOpenAIServer:
        if self._httpd is not None:
            return self
        # The tokenizer takes a second to load and holds the interpreter meanwhile: load it before the first request,
        # or that request (and the client's next one) can miss a short client timeout.
        estimate_tokens("warm up")
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # one request per connection: nothing lingers after stop()

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/v1/models":
                    body = {"object": "list", "data": [{"id": server.model, "object": "model", "owned_by": "coteam"}]}
                    self._send(200, body)
                else:
                    self._send(404, _error_body(404, f"no route {self.path}"))

            def do_POST(self) -> None:
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, _error_body(404, f"no route {self.path}"))
                    return
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    request = json.loads(self.rfile.read(length) or b"null")
                    if not isinstance(request, dict) or not isinstance(request.get("messages"), list):
                        raise ValueError("the body must be an object with a list of messages")
                except ValueError as exc:
                    self._send(400, _error_body(400, f"bad request: {exc}"))
                    return
                status, body = server._answer(request)
                self._send(status, body)

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = _Server(("127.0.0.1", 0), Handler)
        self._port = int(self._httpd.server_address[1])
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="loopback-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> LoopbackOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port (still known after :meth:`stop`, e.g. to test refused connections)."""
        if self._port is None:
            raise RuntimeError("the loopback server was never started")
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- answers -----------------------------------------------------------------------------------------------
    def _reply(self, request: dict[str, Any], index: int) -> str:
        if self.responses is None:
            users = [m for m in request["messages"] if m.get("role") == "user"]
            return str(users[-1].get("content") or "") if users else ""
        if callable(self.responses):
            return str(self.responses(request))
        return self.responses[min(index, len(self.responses) - 1)]

    def _answer(self, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.requests.append(request)
            number = len(self.requests)
            kind = _format_kind(request.get("response_format"))
            if kind is not None and self.formats is not None and kind not in self.formats:
                return 400, _error_body(400, f"response_format {kind} is not supported")
            if number <= self.fail_first:
                self.failures += 1
                return self.fail_status, _error_body(self.fail_status, f"simulated failure {number}/{self.fail_first}")
            index = self._served
            self._served += 1
        if self.delay_s:
            time.sleep(self.delay_s)
        reply = self._reply(request, index)
        p, c = self.usage_fn(request, reply)
        usage = {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}
        with self._lock:
            self.replies.append(reply)
            if not self.omit_usage:
                self.usages.append(usage)
        body: dict[str, Any] = {
            "id": f"chatcmpl-loopback-{number}",
            "object": "chat.completion",
            "created": 1_700_000_000 + number,
            "model": self.model,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"},
            ],
        }
        if not self.omit_usage:
            body["usage"] = usage
        return 200, body


def _format_kind(response_format: Any) -> str | None:
    if not isinstance(response_format, dict):
        return None
    kind = str(response_format.get("type"))
    return "json_object_schema" if kind == "json_object" and "schema" in response_format else kind


def _error_body(status: int, message: str) -> dict[str, Any]:
    kind = _ERROR_TYPES.get(status, "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}


class BrokenEndpoint:
    """An OpenAI-style ``base_url`` that never answers (see the module docstring for the kinds)."""

    KINDS = ("silent", "hangs_up", "refused")

    def __init__(self, kind: str):
        if kind not in self.KINDS:
            raise ValueError(f"unknown broken endpoint {kind!r}; known: {', '.join(self.KINDS)}")
        self.kind = kind
        self._sock: socket.socket | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.base_url = ""

    def __enter__(self) -> BrokenEndpoint:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        if self.kind == "refused":
            sock.close()  # the port was free a moment ago: connections to it are refused
            return self
        sock.listen(64)
        self._sock = sock
        if self.kind == "hangs_up":
            sock.settimeout(0.1)
            self._thread = threading.Thread(target=self._hang_up, name="broken-endpoint", daemon=True)
            self._thread.start()
        return self

    def _hang_up(self) -> None:
        assert self._sock is not None
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1.0)
                with contextlib.suppress(OSError):
                    conn.recv(1 << 16)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._sock is not None:
            self._sock.close()

"""The pure parts of a call, shared by the sync and the async client.

A method of either client builds a :class:`Call` (what to send, whether it
may be retried, how to read the answer); :class:`Sender` and
:class:`AsyncSender` run it with the same retry rules:

* an ``Idempotency-Key`` is generated once per logical call (when the route
  takes one) and sent again, unchanged, on every retry;
* retried: connection errors before anything was sent (any call), and for
  calls that are safe to repeat (GETs and keyed writes) timeouts, resets,
  ``5xx``, ``429`` and ``409 idempotency_in_progress``;
* the wait is bounded, jittered exponential backoff, or ``Retry-After``
  (capped) when the answer gives one.
"""

from __future__ import annotations

import asyncio
import json
import random
import socket
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Mapping, Optional, TypeVar, Union

import httpx

from .errors import PromptdError, TransportError, from_problem

T = TypeVar("T")

USER_AGENT = "promptd-python/0.1"


@dataclass(frozen=True)
class RetryPolicy:
    """How a call is retried: at most ``attempts`` tries, waiting
    ``base * 2**n`` seconds with full jitter, at most ``cap``; a
    ``Retry-After`` is honoured up to ``max_retry_after``."""

    attempts: int = 4
    base: float = 0.1
    cap: float = 2.0
    max_retry_after: float = 5.0

    def delay(self, attempt: int, retry_after: Optional[float]) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_retry_after)
        return random.uniform(0, min(self.cap, self.base * (2**attempt)))


# Lease renewals are not repeated blindly: the keepalive loop retries
# within the lease's deadline itself.
LEASE_RETRY = RetryPolicy(attempts=2, base=0.02, cap=0.1, max_retry_after=0.2)
NO_RETRY = RetryPolicy(attempts=1)


@dataclass
class Call(Generic[T]):
    """One logical request and how to read its answer."""

    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    json: Any = None
    params: Optional[Mapping[str, Any]] = None
    headers: dict[str, str] = field(default_factory=dict)
    idempotent: bool = False  # the route takes Idempotency-Key
    ok: tuple[int, ...] = (200, 201, 204)
    safe: bool = False  # a POST that only reads (assemble): may be repeated

    def __post_init__(self) -> None:
        if self.idempotent and "Idempotency-Key" not in self.headers:
            self.headers["Idempotency-Key"] = new_key()

    @property
    def repeatable(self) -> bool:
        return self.safe or self.method in ("GET", "HEAD") or "Idempotency-Key" in self.headers


def new_key() -> str:
    return "py-" + uuid.uuid4().hex


def _param(v: Any) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def clean_params(params: Optional[Mapping[str, Any]]) -> Optional[dict[str, Union[str, list[str]]]]:
    """Query parameters without the None ones; a list is a repeated parameter."""
    if params is None:
        return None
    out: dict[str, Union[str, list[str]]] = {}
    for k, v in params.items():
        if v is None:
            continue
        out[k] = [_param(x) for x in v] if isinstance(v, (list, tuple)) else _param(v)
    return out


def body_bytes(payload: Any) -> Optional[bytes]:
    if payload is None:
        return None
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


def decode(resp: httpx.Response) -> Any:
    if not resp.content:
        return None
    try:
        return json.loads(resp.content)
    except ValueError:
        return None


def error_of(resp: httpx.Response) -> PromptdError:
    return from_problem(resp.status_code, decode(resp), resp.headers.get("Retry-After"))


def retryable(call: Call[Any], err: PromptdError) -> bool:
    if not call.repeatable:
        return False
    return err.status >= 500 or err.status == 429 or err.code == "idempotency_in_progress"


def transport_retryable(call: Call[Any], exc: httpx.TransportError) -> bool:
    # Nothing reached the server: safe for any call.
    if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)):
        return True
    return call.repeatable


def finish(call: Call[T], resp: httpx.Response) -> T:
    if resp.status_code in call.ok or resp.status_code == 304:
        return call.parse(resp)
    raise error_of(resp)


class Sender:
    """Runs calls over one httpx.Client."""

    def __init__(self, http: httpx.Client, retry: RetryPolicy) -> None:
        self.http = http
        self.retry = retry

    def send(self, call: Call[T], retry: Optional[RetryPolicy] = None) -> T:
        policy = retry or self.retry
        content = body_bytes(call.json)
        headers = dict(call.headers)
        if content is not None:
            headers["Content-Type"] = "application/json"
        attempt = 0
        while True:
            try:
                resp = self.http.request(call.method, call.path, params=clean_params(call.params),
                                         content=content, headers=headers)
            except httpx.TransportError as exc:
                if attempt + 1 >= policy.attempts or not transport_retryable(call, exc):
                    raise TransportError(f"{call.method} {call.path}: {exc!r}") from exc
                time.sleep(policy.delay(attempt, None))
                attempt += 1
                continue
            try:
                return finish(call, resp)
            except PromptdError as err:
                if attempt + 1 >= policy.attempts or not retryable(call, err):
                    raise
                time.sleep(policy.delay(attempt, err.retry_after))
                attempt += 1


class AsyncSender:
    """Runs calls over one httpx.AsyncClient."""

    def __init__(self, http: httpx.AsyncClient, retry: RetryPolicy) -> None:
        self.http = http
        self.retry = retry

    async def send(self, call: Call[T], retry: Optional[RetryPolicy] = None) -> T:
        policy = retry or self.retry
        content = body_bytes(call.json)
        headers = dict(call.headers)
        if content is not None:
            headers["Content-Type"] = "application/json"
        attempt = 0
        while True:
            try:
                resp = await self.http.request(call.method, call.path, params=clean_params(call.params),
                                               content=content, headers=headers)
            except httpx.TransportError as exc:
                if attempt + 1 >= policy.attempts or not transport_retryable(call, exc):
                    raise TransportError(f"{call.method} {call.path}: {exc!r}") from exc
                await asyncio.sleep(policy.delay(attempt, None))
                attempt += 1
                continue
            try:
                return finish(call, resp)
            except PromptdError as err:
                if attempt + 1 >= policy.attempts or not retryable(call, err):
                    raise
                await asyncio.sleep(policy.delay(attempt, err.retry_after))
                attempt += 1


class _NoDelayBackend:
    """httpcore's sync network backend, with TCP_NODELAY on every
    connection: h11 writes a request's headers and body in two sends, and
    with Nagle the body waits for the server's delayed ACK (~40 ms per POST
    on Linux). asyncio (anyio) sets TCP_NODELAY itself."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def connect_tcp(self, *args: Any, **kwargs: Any) -> Any:
        stream = self._inner.connect_tcp(*args, **kwargs)
        sock = stream.get_extra_info("socket")
        if isinstance(sock, socket.socket):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return stream

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def sync_transport() -> httpx.HTTPTransport:
    """An httpx.HTTPTransport whose connections set TCP_NODELAY (left as
    httpx makes it when its internals are not the ones this knows)."""
    t = httpx.HTTPTransport()
    pool = getattr(t, "_pool", None)
    inner = getattr(pool, "_network_backend", None)
    if inner is not None and hasattr(inner, "connect_tcp"):
        setattr(pool, "_network_backend", _NoDelayBackend(inner))
    return t


def headers_for(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "User-Agent": USER_AGENT, "Accept": "application/json"}

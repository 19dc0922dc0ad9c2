"""LocalPrompts: resolve and assemble in-process from a bundle of promptd.

``LocalPrompts(client, cache_path=...).start()`` downloads GET /v1/bundle
and then answers :meth:`~LocalPrompts.resolve` and
:meth:`~LocalPrompts.assemble` from memory: no network call per request.
A watcher keeps the bundle current: it follows ``GET /v1/events`` as
Server-Sent Events from the bundle's cursor and, on an event that can
change the bundle, fetches it again with ``If-None-Match``; while the
stream is down it polls the bundle conditionally and reconnects with
``Last-Event-ID`` and jittered backoff. Every bundle taken is written
atomically to ``cache_path``, from which a fresh LocalPrompts starts when
promptd is down. Local resolves are counted and flushed to
POST /v1/exposures every ``flush_interval`` seconds and on close.

A session is resolved locally once its pin is known (read from promptd on
first use); a pin the bundle revokes, or does not hold, is resolved by
promptd (the re-pin is a server write).
"""

from __future__ import annotations

import asyncio
import os
import random
import socket
import threading
from typing import Any, Mapping, Optional, Sequence

import httpx

from . import _calls
from ._http import NO_RETRY, Call, RetryPolicy, decode, error_of
from ._localcore import Batch, Core, SSEParser, assembled, parse_event, resolved
from .aio import AsyncClient
from .client import Client
from .errors import PromptdError
from .evaluate import AskServer, Resolution, assemble_resolved
from .models import Assembled, Resolved

ACTIONS = "pointer.switched,version.revoked,version.unrevoked,env.rolled_back,release.*"
STREAM_TIMEOUT = httpx.Timeout(5.0, read=45.0)  # promptd sends progress every 15 s


def _bundle_call(core: Core) -> Call[tuple[int, Optional[dict[str, Any]], Optional[str]]]:
    headers = {"If-None-Match": core.etag} if core.etag else {}

    def parse(r: httpx.Response) -> tuple[int, Optional[dict[str, Any]], Optional[str]]:
        if r.status_code == 304:
            return 304, None, core.etag
        return r.status_code, decode(r), r.headers.get("ETag")
    return Call("GET", "/v1/bundle", parse, params=core.params(), headers=headers)


def _stream_request(core: Core, last_id: Optional[str]) -> tuple[dict[str, str], dict[str, str]]:
    since = max(core.cursor, int(last_id) if last_id and last_id.isdigit() else 0)
    return ({"since": str(since), "actions": ACTIONS},
            {"Accept": "text/event-stream", "Last-Event-ID": str(since)})


def _interrupt(resp: Optional[httpx.Response]) -> None:
    """Wake a thread blocked reading the stream: shut its socket down (a
    close from another thread would not interrupt the read)."""
    if resp is None:
        return
    ns = resp.extensions.get("network_stream")
    sock = ns.get_extra_info("socket") if ns is not None else None
    if isinstance(sock, socket.socket):
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _warmup_retry(core: Core) -> Optional[RetryPolicy]:
    """With a disk copy to fall back on, a cold start does not wait for
    retries: it serves the copy and the watcher catches up."""
    return NO_RETRY if core.cache_path and os.path.exists(core.cache_path) else None


def _drop(err: PromptdError) -> bool:
    """A batch promptd refused for what it holds: sending it again cannot help."""
    return err.status in (400, 404, 413, 422)


class _Stats:
    def __init__(self) -> None:
        self.refreshes = 0
        self.not_modified = 0
        self.stream_connects = 0
        self.server_resolves = 0


class LocalPrompts:
    """Local evaluation (sync); see the module doc. Use as a context
    manager, or call :meth:`start` and :meth:`close`."""

    def __init__(self, client: Client, *, agents: Optional[Sequence[str]] = None,
                 envs: Optional[Sequence[str]] = None, cache_path: Optional[str] = None, stream: bool = True,
                 poll_interval: float = 2.0, flush_interval: float = 2.0, reconnect_max: float = 5.0) -> None:
        self.client = client
        self.core = Core(agents, envs, cache_path)
        self.stream, self.poll_interval, self.flush_interval = stream, poll_interval, flush_interval
        self.reconnect_max = reconnect_max
        self.stats = _Stats()
        self.stream_up = threading.Event()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._resp: Optional[httpx.Response] = None
        self._last_id: Optional[str] = None
        self._refresh_lock = threading.Lock()

    def __enter__(self) -> "LocalPrompts":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def start(self) -> "LocalPrompts":
        """Warm up: fetch the bundle (or, with promptd down, load the disk
        copy), then start the watcher and the exposure flusher."""
        try:
            self.refresh(_warmup_retry(self.core))
        except PromptdError as err:
            if err.status not in (0, 500, 502, 503, 504) or not self.core.load():
                raise
        for target, name in ((self._watch, "promptd-watch"), (self._flusher, "promptd-exposures")):
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def refresh(self, retry: Optional[RetryPolicy] = None) -> bool:
        """Fetch the bundle conditionally; True when a new one was taken."""
        with self._refresh_lock:
            status, body, etag = self.client._send(_bundle_call(self.core), retry)
            if status == 304 or body is None:
                self.stats.not_modified += 1
                return False
            self.stats.refreshes += 1
            if not self.core.apply(body, etag):
                return False
            self.core.from_disk = False
        try:
            self.core.save()
        except OSError:
            pass  # the disk copy is best effort; serving goes on
        return True

    # Runtime path.
    def resolve(self, agent: str, env: str, user_id: Optional[str] = None,
                session_id: Optional[str] = None) -> Resolved:
        return self._resolve(agent, env, user_id, session_id)[1]

    def _resolve(self, agent: str, env: str, user_id: Optional[str],
                 session_id: Optional[str]) -> tuple[Optional[Resolution], Resolved]:
        try:
            res = self.core.resolve(agent, env, user_id, session_id)
            return res, resolved(res)
        except AskServer:
            pass
        if session_id is not None:
            if session_id not in self.core.pins:
                self.core.learn(self.client.get_session(session_id, limit=1))
            missing = self.core.missing_pin(session_id)
            if missing is not None:  # a version never changes: read it once
                v = self.client.get_version(*missing)
                self.core.versions[missing] = {"content_hash": v.content_hash, "config": v.config}
            try:
                res = self.core.resolve(agent, env, user_id, session_id)
                return res, resolved(res)
            except AskServer:
                pass
        self.stats.server_resolves += 1
        r = self.client.resolve(agent, env, user_id, session_id)
        pin = self.core.pins.get(session_id or "")
        if pin is not None and r.pinned:
            pin.version = r.version  # re-pinned by promptd
        return None, r

    def assemble(self, agent: str, env: str, variables: Optional[Mapping[str, Any]] = None, *,
                 user_id: Optional[str] = None, session_id: Optional[str] = None,
                 history: Optional[Sequence[Mapping[str, Any]]] = None, max_history_turns: Optional[int] = None,
                 format: str = "plain") -> Assembled:
        """Assembled locally; ``history`` is the turns to append (the
        caller's copy of the conversation)."""
        res, r = self._resolve(agent, env, user_id, session_id)
        if res is None:
            res = Resolution(agent=r.agent, env=r.env, version=r.version, content_hash=r.content_hash,
                             config=r.config, release=r.release.to_json() if r.release else None, pinned=r.pinned)
        return assembled(assemble_resolved(res, variables, history, max_history_turns, format,
                                           self.core.rendered), res, format)

    # The watcher.
    def _watch(self) -> None:
        backoff = 0.1
        while not self._stop.is_set():
            if self.stream:
                try:
                    self._stream_once()
                    backoff = 0.1
                except (PromptdError, httpx.HTTPError, ValueError):
                    pass
                self.stream_up.clear()
                if self._stop.is_set():
                    return
            try:
                self.refresh()  # the stream is down: poll
            except PromptdError:
                pass
            wait = random.uniform(backoff / 2, backoff) if self.stream else self.poll_interval
            backoff = min(backoff * 2, self.reconnect_max)
            self._stop.wait(min(wait, self.poll_interval))

    def _stream_once(self) -> None:
        params, headers = _stream_request(self.core, self._last_id)
        parser = SSEParser()
        with self.client.http.stream("GET", "/v1/events", params=params, headers=headers,
                                     timeout=STREAM_TIMEOUT) as resp:
            if resp.status_code != 200:
                resp.read()
                raise error_of(resp)
            self._resp = resp
            self.stats.stream_connects += 1
            self.stream_up.set()
            try:
                for line in resp.iter_lines():
                    for ev in parser.feed(line):
                        if ev.id:
                            self._last_id = ev.id
                        d = parse_event(ev)
                        if d is not None and self.core.wants(d):
                            self.refresh()
                    if self._stop.is_set():
                        return
            finally:
                self._resp = None

    # Exposures.
    def _flusher(self) -> None:
        while not self._stop.wait(self.flush_interval):
            self.flush()

    def flush(self) -> None:
        """Send the counted exposures; a batch that fails for a transient
        cause is kept, with its Idempotency-Key, for the next flush."""
        for b in self.core.exposures.take():
            if not self._send_batch(b):
                return

    def _send_batch(self, b: Batch) -> bool:
        try:
            self.client._send(_calls.exposures(b.items, b.key))
        except PromptdError as err:
            if _drop(err):
                self.core.exposures.done(b, False)
                return True
            b.attempts += 1
            return False
        self.core.exposures.done(b, True)
        return True

    def close(self) -> None:
        """Stop the watcher and flush the exposures."""
        self._stop.set()
        _interrupt(self._resp)
        for t in self._threads:
            t.join(timeout=5)
        self._threads = []
        self.flush()


class AsyncLocalPrompts:
    """Local evaluation (asyncio): the same as :class:`LocalPrompts`, with
    the watcher and the flusher as tasks."""

    def __init__(self, client: AsyncClient, *, agents: Optional[Sequence[str]] = None,
                 envs: Optional[Sequence[str]] = None, cache_path: Optional[str] = None, stream: bool = True,
                 poll_interval: float = 2.0, flush_interval: float = 2.0, reconnect_max: float = 5.0) -> None:
        self.client = client
        self.core = Core(agents, envs, cache_path)
        self.stream, self.poll_interval, self.flush_interval = stream, poll_interval, flush_interval
        self.reconnect_max = reconnect_max
        self.stats = _Stats()
        self.stream_up = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._last_id: Optional[str] = None
        self._refresh_lock = asyncio.Lock()

    async def __aenter__(self) -> "AsyncLocalPrompts":
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def start(self) -> "AsyncLocalPrompts":
        try:
            await self.refresh(_warmup_retry(self.core))
        except PromptdError as err:
            if err.status not in (0, 500, 502, 503, 504) or not self.core.load():
                raise
        self._tasks = [asyncio.create_task(self._watch()), asyncio.create_task(self._flusher())]
        return self

    async def refresh(self, retry: Optional[RetryPolicy] = None) -> bool:
        async with self._refresh_lock:
            status, body, etag = await self.client._send(_bundle_call(self.core), retry)
            if status == 304 or body is None:
                self.stats.not_modified += 1
                return False
            self.stats.refreshes += 1
            if not self.core.apply(body, etag):
                return False
            self.core.from_disk = False
        try:
            await asyncio.to_thread(self.core.save)
        except OSError:
            pass
        return True

    async def resolve(self, agent: str, env: str, user_id: Optional[str] = None,
                      session_id: Optional[str] = None) -> Resolved:
        return (await self._resolve(agent, env, user_id, session_id))[1]

    async def _resolve(self, agent: str, env: str, user_id: Optional[str],
                       session_id: Optional[str]) -> tuple[Optional[Resolution], Resolved]:
        try:
            res = self.core.resolve(agent, env, user_id, session_id)
            return res, resolved(res)
        except AskServer:
            pass
        if session_id is not None:
            if session_id not in self.core.pins:
                self.core.learn(await self.client.get_session(session_id, limit=1))
            missing = self.core.missing_pin(session_id)
            if missing is not None:  # a version never changes: read it once
                v = await self.client.get_version(*missing)
                self.core.versions[missing] = {"content_hash": v.content_hash, "config": v.config}
            try:
                res = self.core.resolve(agent, env, user_id, session_id)
                return res, resolved(res)
            except AskServer:
                pass
        self.stats.server_resolves += 1
        r = await self.client.resolve(agent, env, user_id, session_id)
        pin = self.core.pins.get(session_id or "")
        if pin is not None and r.pinned:
            pin.version = r.version
        return None, r

    async def assemble(self, agent: str, env: str, variables: Optional[Mapping[str, Any]] = None, *,
                       user_id: Optional[str] = None, session_id: Optional[str] = None,
                       history: Optional[Sequence[Mapping[str, Any]]] = None,
                       max_history_turns: Optional[int] = None, format: str = "plain") -> Assembled:
        res, r = await self._resolve(agent, env, user_id, session_id)
        if res is None:
            res = Resolution(agent=r.agent, env=r.env, version=r.version, content_hash=r.content_hash,
                             config=r.config, release=r.release.to_json() if r.release else None, pinned=r.pinned)
        return assembled(assemble_resolved(res, variables, history, max_history_turns, format,
                                           self.core.rendered), res, format)

    async def _watch(self) -> None:
        backoff = 0.1
        while True:
            if self.stream:
                try:
                    await self._stream_once()
                    backoff = 0.1
                except (PromptdError, httpx.HTTPError, ValueError):
                    pass
                self.stream_up.clear()
            try:
                await self.refresh()
            except PromptdError:
                pass
            wait = random.uniform(backoff / 2, backoff) if self.stream else self.poll_interval
            backoff = min(backoff * 2, self.reconnect_max)
            await asyncio.sleep(min(wait, self.poll_interval))

    async def _stream_once(self) -> None:
        params, headers = _stream_request(self.core, self._last_id)
        parser = SSEParser()
        async with self.client.http.stream("GET", "/v1/events", params=params, headers=headers,
                                           timeout=STREAM_TIMEOUT) as resp:
            if resp.status_code != 200:
                await resp.aread()
                raise error_of(resp)
            self.stats.stream_connects += 1
            self.stream_up.set()
            async for line in resp.aiter_lines():
                for ev in parser.feed(line):
                    if ev.id:
                        self._last_id = ev.id
                    d = parse_event(ev)
                    if d is not None and self.core.wants(d):
                        await self.refresh()

    async def _flusher(self) -> None:
        while True:
            await asyncio.sleep(self.flush_interval)
            await self.flush()

    async def flush(self) -> None:
        for b in self.core.exposures.take():
            try:
                await self.client._send(_calls.exposures(b.items, b.key))
            except PromptdError as err:
                if _drop(err):
                    self.core.exposures.done(b, False)
                    continue
                b.attempts += 1
                return
            self.core.exposures.done(b, True)

    async def close(self) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            try:
                await t
            except asyncio.CancelledError:
                pass
        self._tasks = []
        await self.flush()

"""The change feed as a stream (api/openapi.yaml, "Events: change feed"):
``for ev in client.events(since="0"):`` yields each event's JSON in
``seq`` order, once; the connection is re-made after a drop with
``Last-Event-ID`` (the last id seen, progress events included) and jittered
backoff, so nothing is skipped or repeated across reconnects."""

from __future__ import annotations

import asyncio
import random
import time
from typing import TYPE_CHECKING, Any, AsyncIterator, Iterator, Optional, Union

import httpx

from ._http import clean_params, error_of
from ._localcore import SSEParser, parse_event

if TYPE_CHECKING:
    from .aio import AsyncClient
    from .client import Client

TIMEOUT = httpx.Timeout(5.0, read=45.0)  # promptd sends progress every 15 s


def _request(since: Optional[str], last_id: Optional[str], actions: Optional[str], agent: Optional[str],
             env: Optional[str], board: Optional[str]) -> tuple[dict[str, Union[str, list[str]]], dict[str, str]]:
    headers = {"Accept": "text/event-stream"}
    if last_id is not None:
        headers["Last-Event-ID"] = last_id
    params = clean_params({"since": since, "actions": actions, "agent": agent, "env": env, "board": board}) or {}
    return params, headers


def events(client: "Client", since: Optional[str] = None, actions: Optional[str] = None,
           agent: Optional[str] = None, env: Optional[str] = None, board: Optional[str] = None,
           reconnect_max: float = 5.0) -> Iterator[dict[str, Any]]:
    last_id: Optional[str] = None
    backoff = 0.1
    while True:
        params, headers = _request(since, last_id, actions, agent, env, board)
        parser = SSEParser()
        try:
            with client.http.stream("GET", "/v1/events", params=params, headers=headers, timeout=TIMEOUT) as resp:
                if resp.status_code != 200:
                    resp.read()
                    err = error_of(resp)
                    if err.status < 500 and err.status != 429:
                        raise err
                    raise httpx.NetworkError(str(err))
                backoff = 0.1
                for line in resp.iter_lines():
                    for ev in parser.feed(line):
                        if ev.id:
                            last_id = ev.id
                        if ev.event == "progress":
                            continue
                        d = parse_event(ev)
                        if d is not None:
                            yield d
        except httpx.HTTPError:
            pass
        time.sleep(random.uniform(backoff / 2, backoff))
        backoff = min(backoff * 2, reconnect_max)


async def aevents(client: "AsyncClient", since: Optional[str] = None, actions: Optional[str] = None,
                  agent: Optional[str] = None, env: Optional[str] = None, board: Optional[str] = None,
                  reconnect_max: float = 5.0) -> AsyncIterator[dict[str, Any]]:
    last_id: Optional[str] = None
    backoff = 0.1
    while True:
        params, headers = _request(since, last_id, actions, agent, env, board)
        parser = SSEParser()
        try:
            async with client.http.stream("GET", "/v1/events", params=params, headers=headers,
                                          timeout=TIMEOUT) as resp:
                if resp.status_code != 200:
                    await resp.aread()
                    err = error_of(resp)
                    if err.status < 500 and err.status != 429:
                        raise err
                    raise httpx.NetworkError(str(err))
                backoff = 0.1
                async for line in resp.aiter_lines():
                    for ev in parser.feed(line):
                        if ev.id:
                            last_id = ev.id
                        if ev.event == "progress":
                            continue
                        d = parse_event(ev)
                        if d is not None:
                            yield d
        except httpx.HTTPError:
            pass
        await asyncio.sleep(random.uniform(backoff / 2, backoff))
        backoff = min(backoff * 2, reconnect_max)


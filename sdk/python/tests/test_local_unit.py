"""LocalPrompts' own mechanics against a scripted transport (the real
promptd tests are in test_local.py): conditional refetch on an event,
zero calls per resolve, exposure batches keeping their key across retries,
the SSE parser."""

from __future__ import annotations

import json
import threading
import time
from typing import Any, Iterator

import httpx

import promptd
from promptd._http import RetryPolicy
from promptd._localcore import SSEParser

FAST = RetryPolicy(attempts=2, base=0.01, cap=0.02, max_retry_after=0.02)


def bundle(version: int, cursor: int) -> dict[str, Any]:
    cfg = {"system": "v" + str(version), "model": {"name": "m"}}
    return {"cursor": str(cursor), "agents": {"a": {
        "versions": {str(version): {"content_hash": f"sha256:{version}", "config": cfg}},
        "envs": {"prod": {"version": version, "revision": version, "revoked": [], "release": None}}}}}


class Fake:
    """/v1/bundle with ETags, /v1/events as SSE naming one switch, then
    nothing; /v1/exposures failing as scripted."""

    def __init__(self) -> None:
        self.version = 1
        self.calls: list[httpx.Request] = []
        self.exposure_answers: list[int] = []
        self.exposures: list[httpx.Request] = []
        self.event_sent = threading.Event()
        self.switch = threading.Event()
        self.closed = threading.Event()

    def stream(self) -> Iterator[bytes]:
        yield b": connected\n\n"
        if self.event_sent.is_set():
            self.closed.wait(5)
            return
        self.switch.wait(5)
        self.version = 2
        ev = {"seq": 2, "action": "pointer.switched", "agent": "a", "env": "prod", "revision": 2}
        self.event_sent.set()
        yield f"id: 2\nevent: pointer.switched\ndata: {json.dumps(ev)}\n\n".encode()
        yield b"id: 3\nevent: progress\ndata: {}\n\n"
        self.closed.wait(5)

    def handler(self, req: httpx.Request) -> httpx.Response:
        self.calls.append(req)
        if req.url.path == "/v1/bundle":
            etag = f'"b{self.version}"'
            if req.headers.get("If-None-Match") == etag:
                return httpx.Response(304, headers={"ETag": etag})
            return httpx.Response(200, json=bundle(self.version, self.version), headers={"ETag": etag})
        if req.url.path == "/v1/events":
            return httpx.Response(200, content=self.stream(), headers={"Content-Type": "text/event-stream"})
        if req.url.path == "/v1/exposures":
            self.exposures.append(req)
            status = self.exposure_answers.pop(0) if self.exposure_answers else 200
            return httpx.Response(status, json={"accepted": 1} if status == 200 else {"code": "internal"})
        return httpx.Response(404, json={"code": "not_found"})


def test_localPrompts_resolvesWithoutCalls_andRefetchesOnAnEvent() -> None:
    fake = Fake()
    c = promptd.Client("http://promptd.test", "t", retry=FAST, transport=httpx.MockTransport(fake.handler))
    with promptd.LocalPrompts(c, flush_interval=3600, poll_interval=0.05) as lp:
        assert lp.resolve("a", "prod").version == 1
        n = len(fake.calls)
        for _ in range(1000):
            lp.resolve("a", "prod", user_id="u")
        assert len(fake.calls) == n
        fake.switch.set()
        deadline = time.monotonic() + 3
        while lp.resolve("a", "prod").version != 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert lp.resolve("a", "prod").version == 2
        assert lp.assemble("a", "prod").messages == [{"role": "system", "content": "v2"}]
        assert lp.core.cursor >= 2
        assert [r.url.path for r in fake.calls] == ["/v1/bundle", "/v1/events", "/v1/bundle"]
        fake.closed.set()


def test_exposures_aFailedBatchKeepsItsKey_andIsSentAgain() -> None:
    fake = Fake()
    fake.exposure_answers = [503, 503, 200]  # attempts=2: the first flush gives up, the second succeeds
    c = promptd.Client("http://promptd.test", "t", retry=FAST, transport=httpx.MockTransport(fake.handler))
    lp = promptd.LocalPrompts(c, flush_interval=3600, stream=False, poll_interval=3600).start()
    for _ in range(5):
        lp.resolve("a", "prod")
    lp.flush()
    assert lp.core.exposures.sent == 0 and len(lp.core.exposures.pending) == 1
    lp.close()
    keys = [r.headers["Idempotency-Key"] for r in fake.exposures]
    assert len(keys) == 3 and len(set(keys)) == 1
    items = json.loads(fake.exposures[-1].content)["items"]
    assert [(i["agent"], i["env"], i["version"], i["count"]) for i in items] == [("a", "prod", 1, 5)]
    assert lp.core.exposures.sent == 5


def test_sseParser_multiLineDataCommentsAndIds() -> None:
    p = SSEParser()
    out = []
    for line in [": hi\n", "id: 5\n", "event: x\n", "data: a\n", "data: b\n", "\n", "data: c\n", "\n"]:
        out.extend(p.feed(line))
    assert [(e.id, e.event, e.data) for e in out] == [("5", "x", "a\nb"), ("5", "message", "c")]


def test_releaseHeader_parsesTheRFC8941Dictionary() -> None:
    from promptd._calls import release_header

    t = release_header('id="rel_1", arm=candidate, bucket=771, reason=bucket')
    assert t is not None and (t.id, t.arm, t.bucket, t.reason) == ("rel_1", "candidate", 771, "bucket")
    t = release_header('id="a\\"b", arm=baseline, reason=pinned')
    assert t is not None and (t.id, t.bucket, t.reason) == ('a"b', None, "pinned")
    assert release_header(None) is None

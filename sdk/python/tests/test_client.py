"""The HTTP client against a real promptd: typed errors, Idempotency-Key
retries, sessions with optimistic appends, assemble over HTTP."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any, Callable

import httpx
import pytest
from conftest import ADMIN, CONFIG, ROOT, RUNTIME, Promptd, uid

import promptd
from promptd import errors
from promptd._http import RetryPolicy, sync_transport


class Recording(httpx.BaseTransport):
    """A transport that records every request and may fail some of them."""

    def __init__(self, fail: Callable[[httpx.Request, int], Any] = lambda r, n: None) -> None:
        self.inner = sync_transport()
        self.requests: list[httpx.Request] = []
        self.fail = fail
        self.lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        with self.lock:
            self.requests.append(request)
            n = len(self.requests)
        early = self.fail(request, n)
        if isinstance(early, httpx.Response):
            return early
        resp = self.inner.handle_request(request)
        if early == "drop-after-send":
            resp.read()
            resp.close()
            raise httpx.ReadError("connection reset after the request was sent", request=request)
        return resp


FAST = RetryPolicy(attempts=4, base=0.01, cap=0.05, max_retry_after=0.05)


def admin(server: Promptd, **kw: Any) -> promptd.Client:
    return promptd.Client(server.url, ADMIN, retry=FAST, **kw)


def runtime(server: Promptd, **kw: Any) -> promptd.Client:
    return promptd.Client(server.url, RUNTIME, retry=FAST, **kw)


def publish(c: promptd.Client, agent: str, env: str = "prod", config: Any = None) -> int:
    v = c.create_version(agent, config or CONFIG, 0, "first")
    c.set_env(agent, env, v.version, 0)
    return v.version


def test_errors_everyCodeOfTheServer_hasItsOwnClass() -> None:
    table = json.loads((ROOT / "problem" / "codes.json").read_text())
    codes = [(c["code"], c["status"]) for c in table["codes"]]
    assert len(codes) > 30
    missing = [c for c, _ in codes if c not in errors.CODES and c != "method_not_allowed"]
    assert missing == []
    for code, _ in codes:
        cls = errors.CODES.get(code)
        if cls is not None:
            assert cls.code == code or code in ("unauthorized", "forbidden", "not_found", "precondition_failed",
                                                "precondition_required")


def test_errors_problemAnswers_raiseTypedExceptionsWithTheirFields(shared_server: Promptd) -> None:
    agent = uid()
    with admin(shared_server) as c, runtime(shared_server) as rt:
        publish(c, agent)
        with pytest.raises(errors.VersionConflict) as vc:
            c.create_version(agent, CONFIG, 0)
        assert vc.value.status == 409 and vc.value.latest_version == 1
        with pytest.raises(errors.Forbidden):
            rt.create_version(agent, CONFIG, 1)
        with pytest.raises(errors.SessionNotFound) as nf:
            rt.get_session(uid("s"))
        assert isinstance(nf.value, errors.NotFound) and nf.value.code == "session_not_found"
        s = rt.create_session(agent, "prod", user_id="u1")
        rt.append(s.session_id, [{"role": "user", "content": "hi"}], 0)
        with pytest.raises(promptd.RevisionConflict) as rc:
            rt.append(s.session_id, [{"role": "user", "content": "again"}], 0)
        assert rc.value.current_revision == 1
        g = rt.acquire_session_lease(s.session_id, "worker-1", ttl_ms=5000)
        with pytest.raises(promptd.LeaseHeld) as held:
            rt.append(s.session_id, [{"role": "user", "content": "x"}], 1)
        assert held.value.holder == "worker-1" and held.value.expires_at
        with pytest.raises(promptd.StaleFence) as sf:
            rt.append(s.session_id, [{"role": "user", "content": "x"}], 1, fence=g.fence - 1)
        assert sf.value.current_fence == g.fence
        with pytest.raises(errors.MissingVariable) as mv:
            rt.assemble(agent, "prod", {})
        assert mv.value.variable == "persona"
        with pytest.raises(errors.Unauthorized):
            promptd.Client(shared_server.url, "nope-nope-nope-nope").get_env(agent, "prod")


def test_idempotency_whenTheAnswerIsLost_theRetryReusesTheKeyAndAppendsOnce(shared_server: Promptd) -> None:
    agent = uid()
    with admin(shared_server) as c:
        publish(c, agent)
    t = Recording(lambda r, n: "drop-after-send" if r.url.path.endswith("/turns") and n == 2 else None)
    with runtime(shared_server, transport=t) as rt:
        s = rt.create_session(agent, "prod", user_id="u1")
        out = rt.append(s.session_id, [{"role": "user", "content": "hello"}], 0)
        assert out.revision == 1 and out.seqs == [1]
        sent = [r for r in t.requests if r.url.path.endswith("/turns")]
        assert len(sent) == 2
        keys = {r.headers["Idempotency-Key"] for r in sent}
        assert len(keys) == 1
        got = rt.get_session(s.session_id)
        assert got.revision == 1 and [x.content for x in got.turns] == ["hello"]


def test_retry_when503WithRetryAfter_retriesWithTheSameKey(shared_server: Promptd) -> None:
    agent = uid()
    with admin(shared_server) as c:
        publish(c, agent)

    def fail(r: httpx.Request, n: int) -> Any:
        if r.url.path == "/v1/sessions" and n == 1:
            return httpx.Response(503, headers={"Retry-After": "0", "Content-Type": "application/problem+json"},
                                  json={"code": "store_unavailable", "status": 503, "store": "sql"})
        return None

    t = Recording(fail)
    with runtime(shared_server, transport=t) as rt:
        s = rt.create_session(agent, "prod", user_id="u1")
        assert s.revision == 0
        assert [r.headers["Idempotency-Key"] for r in t.requests][0] == t.requests[1].headers["Idempotency-Key"]
    with runtime(shared_server, transport=Recording(lambda r, n: httpx.Response(
            503, headers={"Retry-After": "0"}, json={"code": "store_unavailable", "status": 503, "store": "sql"})),
            ) as rt:
        with pytest.raises(promptd.StoreUnavailable) as su:
            rt.create_session(agent, "prod")
        assert su.value.store == "sql" and su.value.retry_after == 0


def test_retry_aWriteWithoutKey_isNotRepeatedAfterItWasSent(shared_server: Promptd) -> None:
    agent = uid()
    with admin(shared_server) as c:
        publish(c, agent)
    t = Recording(lambda r, n: "drop-after-send" if r.url.path.endswith("/lease") else None)
    with runtime(shared_server, transport=t) as rt:
        s = rt.create_session(agent, "prod")
        with pytest.raises(promptd.TransportError):
            rt.acquire_session_lease(s.session_id, "h")
        assert len([r for r in t.requests if r.url.path.endswith("/lease")]) == 1


def test_appendRetrying_whenAnotherWriterWins_rereadsAndAppendsOnTop(shared_server: Promptd) -> None:
    agent = uid()
    with admin(shared_server) as c:
        publish(c, agent)
    with runtime(shared_server) as rt, runtime(shared_server) as other:
        s = rt.create_session(agent, "prod", user_id="u1")
        calls = []

        def decide(sess: promptd.Session) -> list[dict[str, Any]]:
            calls.append(sess.revision)
            if len(calls) == 1:  # someone else appends between our read and our write
                other.append(sess.session_id, [{"role": "user", "content": "theirs"}], sess.revision)
            return [{"role": "assistant", "content": f"mine after {len(sess.turns)}"}]

        out = rt.append_retrying(s.session_id, decide)
        assert out is not None and out.revision == 2 and calls == [0, 1]
        got = rt.get_session(s.session_id)
        assert [t.content for t in got.turns] == ["theirs", "mine after 1"]


def test_sessions_stateAndClose_roundTrip(shared_server: Promptd) -> None:
    agent = uid()
    with admin(shared_server) as c:
        publish(c, agent)
    with runtime(shared_server) as rt:
        s = rt.create_session(agent, "prod", user_id="u1", metadata={"k": "v"})
        e = rt.put_state(s.session_id, "plan", {"step": 1}, 0)
        assert e.revision == 1
        with pytest.raises(promptd.RevisionConflict):
            rt.put_state(s.session_id, "plan", {"step": 2}, 0)
        assert rt.get_state(s.session_id)["plan"].value == {"step": 1}
        rt.close_session(s.session_id, 0)
        with pytest.raises(errors.SessionClosed):
            rt.append(s.session_id, [{"role": "user", "content": "late"}], 1)


def test_assemble_overHttp_plainAndOpenAI(shared_server: Promptd) -> None:
    agent = uid()
    with admin(shared_server) as c:
        publish(c, agent)
    with runtime(shared_server) as rt:
        a = rt.assemble(agent, "prod", {"persona": "a <helpful> bot"})
        assert a.version == 1
        assert a.messages[0] == {"role": "system", "content": (
            "You are a <helpful> bot for ACME.\n\n# Skills\n\n## refunds\nRefunds within 30 days."
            "\n\n# Memory\n- Customer prefers email.")}
        r = rt.resolve(agent, "prod", user_id="u1")
        assert r.version == 1 and r.release is None and not r.pinned


def test_assemble_toolsAndModel_inBothFormats_andAsync(shared_server: Promptd) -> None:
    agent = uid()
    tool = {"type": "function", "function": {"name": "lookup_order", "description": "Find an order",
                                             "parameters": {"type": "object", "properties": {}}}}
    with admin(shared_server) as c:
        publish(c, agent, config={**CONFIG, "tools": [tool], "model": {"name": "gpt-4o", "temperature": 0.2,
                                                                        "top_p": 0.9}})
        bare = uid()
        publish(c, bare, config={"system": "Hi."})
    want_model = {"name": "gpt-4o", "temperature": 0.2, "top_p": 0.9}
    with runtime(shared_server) as rt:
        for fmt in ("plain", "openai"):
            a = rt.assemble(agent, "prod", {"persona": "x"}, format=fmt)
            assert (a.tools, a.model, a.model_name) == ([tool], want_model, "gpt-4o"), fmt
        b = rt.assemble(bare, "prod")  # (the openai format needs model.name)
        assert (b.tools, b.model, b.model_name) == ([], None, None)

    async def main() -> None:
        async with promptd.AsyncClient(shared_server.url, RUNTIME, retry=FAST) as ac:
            a = await ac.assemble(agent, "prod", {"persona": "x"}, format="openai")
            assert (a.tools, a.model) == ([tool], want_model)

    asyncio.run(main())


def test_syncClient_setsTcpNoDelay_soAPostIsNotHeldByNagleAndDelayedAck(shared_server: Promptd) -> None:
    # h11 writes a POST's headers and body separately: without TCP_NODELAY
    # the body waits for the server's delayed ACK (~40 ms on Linux).
    import socket

    with runtime(shared_server) as rt:
        r = rt.http.get("/healthz")
        sock = r.extensions["network_stream"].get_extra_info("socket")
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0


def test_createVersion_mergeOfAStaleBase_keepsBothChanges_orRaisesMergeConflictWithThePaths(
        shared_server: Promptd) -> None:
    agent = uid()
    with admin(shared_server) as c:
        publish(c, agent)
        theirs = c.create_version(agent, {**CONFIG, "model": {"name": "gpt-4o", "temperature": 0.7}}, 1, "theirs")
        with pytest.raises(errors.VersionConflict):
            c.create_version(agent, {**CONFIG, "memory": ["Customer prefers phone."]}, 1, "ours")
        merged = c.create_version(agent, {**CONFIG, "memory": ["Customer prefers phone."]}, 1, "ours", merge=True)
        assert merged.version == theirs.version + 1
        assert merged.merge == promptd.models.VersionMerge(base_version=1, theirs_version=theirs.version)
        assert merged.config["model"] == {"name": "gpt-4o", "temperature": 0.7}
        assert merged.config["memory"] == ["Customer prefers phone."]
        with pytest.raises(promptd.MergeConflict) as mc:
            c.create_version(agent, {**CONFIG, "model": {"name": "gpt-4o", "temperature": 0.1}}, 1, merge=True)
        err = mc.value
        assert err.latest_version == merged.version and err.base_version == 1
        assert [(p.path, p.base, p.ours, p.theirs) for p in err.conflicts] == [
            (["model", "temperature"], 0.2, 0.1, 0.7)]

"""Releases, record lists and session lists from both clients against a
real promptd: start, ramp, pause, resume, promote and roll back a
release; get and list releases; list a board's records and the sessions."""

from __future__ import annotations

import asyncio
import dataclasses
import typing
from typing import Any

from conftest import ADMIN, CONFIG, Promptd, uid
from test_client import FAST, admin, publish, runtime
from test_openapi_models import page_item

import pytest

import promptd


def _candidate(c: promptd.Client, agent: str, base: int) -> int:
    return c.create_version(agent, {**CONFIG, "system": f"v{base + 1}: {{{{persona}}}}"}, base, "next").version


def test_release_startRampPauseResumePromote_movesThePointer(shared_server: Promptd) -> None:
    agent = uid("rel")
    with admin(shared_server) as c:
        v1 = publish(c, agent)
        v2 = _candidate(c, agent, v1)
        rel = c.create_release(agent, "prod", v2, 10, message="try v2")
        assert (rel.state, rel.baseline_version, rel.candidate_version, rel.percent) == ("running", v1, v2, 10)
        rel = c.ramp_release(rel.id, 50, rel.revision, reason="looks fine")
        assert rel.percent == 50
        rel = c.pause_release(rel.id, expected_revision=rel.revision, reason="lunch")
        assert rel.state == "paused"
        rel = c.resume_release(rel.id)
        assert rel.state == "running"
        rel = c.promote_release(rel.id, reason="ship it")
        assert rel.state == "promoted"
        assert c.get_env(agent, "prod").version == v2
        got = c.get_release(rel.id)
        assert got.id == rel.id and got.state == "promoted" and got.history
        page = c.list_releases(agent, "prod", limit=10)
        assert [r.id for r in page.items] == [rel.id]


def test_release_rollback_keepsTheBaseline(shared_server: Promptd) -> None:
    agent = uid("rel")
    with admin(shared_server) as c:
        v1 = publish(c, agent)
        v2 = _candidate(c, agent, v1)
        rel = c.create_release(agent, "prod", v2, 25, stickiness="session")
        rel = c.rollback_release(rel.id, expected_revision=rel.revision, reason="bad")
        assert rel.state == "rolled_back" and c.get_env(agent, "prod").version == v1


def test_lists_recordsByStateAndSessionsByAgent(shared_server: Promptd) -> None:
    board, agent = uid("b"), uid("ls")
    with admin(shared_server) as c, runtime(shared_server) as rt:
        publish(c, agent)
        a = rt.create_record(board, {"n": 1}, id="r1")
        rt.create_record(board, {"n": 2}, id="r2")
        assert rt.claim_next(board, "w1") is not None  # claims r1, the first
        pending = rt.list_records(board, state="pending")
        assert [r.id for r in pending.items] == ["r2"]
        everything = rt.list_records(board, limit=1)
        assert len(everything.items) == 1 and everything.items[0].id == a.id and everything.next
        s = rt.create_session(agent, "prod", user_id="u1")
        sessions = rt.list_sessions(agent=agent, env="prod", state="open")
        assert [x.session_id for x in sessions.items] == [s.session_id]


def test_asyncClient_releasesAndLists(shared_server: Promptd) -> None:
    agent, board = uid("rel"), uid("b")
    with admin(shared_server) as c:
        v1 = publish(c, agent)
        v2 = _candidate(c, agent, v1)
        v3 = _candidate(c, agent, v2)  # (a rolled-back candidate is revoked in the env)

    async def main() -> None:
        async with promptd.AsyncClient(shared_server.url, ADMIN, retry=FAST) as ac:
            rel = await ac.create_release(agent, "prod", v2, 5)
            rel = await ac.ramp_release(rel.id, 20, rel.revision)
            assert rel.percent == 20
            assert (await ac.pause_release(rel.id)).state == "paused"
            assert (await ac.resume_release(rel.id)).state == "running"
            assert (await ac.rollback_release(rel.id)).state == "rolled_back"
            rel2 = await ac.create_release(agent, "prod", v3, 50)
            assert (await ac.promote_release(rel2.id)).state == "promoted"
            assert (await ac.get_release(rel.id)).state == "rolled_back"
            assert {r.id for r in (await ac.list_releases(agent, "prod")).items} == {rel.id, rel2.id}
            await ac.create_record(board, {"n": 1}, id="x1")
            assert [r.id for r in (await ac.list_records(board)).items] == ["x1"]
            s = await ac.create_session(agent, "prod")
            sessions = (await ac.list_sessions(agent=agent)).items
            assert [x.session_id for x in sessions] == [s.session_id]
            assert isinstance(sessions[0], promptd.SessionSummary)

    asyncio.run(main())


def _mismatch(name: str, items: list[Any]) -> list[str]:
    """What a list method's items and its annotated model disagree on: an
    item of another class, a key the server sent that is no field, a field
    that may not be None and has no default (no Optional, no default: a field
    with one, like a create answer's dry_run, may be absent) the server did
    not send."""
    cls = page_item(typing.get_type_hints(getattr(promptd.Client, name))["return"])
    if not items:
        return [f"{name}: no items to check"]
    if not isinstance(cls, type) or not dataclasses.is_dataclass(cls):
        return [f"{name}: its page's items are {cls!r}, not a model class"]
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.name != "raw"}
    needed = {k for k, f in fields.items()
              if type(None) not in typing.get_args(hints[k]) and f.default is not None
              and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    out: set[str] = set()
    for item in items:
        if not isinstance(item, cls):
            out.add(f"{name}: an item is a {type(item).__name__}, not {cls.__name__}")
            continue
        raw = getattr(item, "raw")
        out |= {f"{name}: the server sent {k!r}, {cls.__name__} has no such field" for k in raw.keys() - fields.keys()}
        out |= {f"{name}: {cls.__name__} needs {k!r}, the server sent none" for k in needed - raw.keys()}
    return sorted(out)


def test_lists_answerTheirModels_withEveryKeyTheServerSent(shared_server: Promptd) -> None:
    agent, board = uid("lk"), uid("b")
    with admin(shared_server) as c:
        v1 = publish(c, agent)
        rel = c.create_release(agent, "prod", _candidate(c, agent, v1), 10)
        s = c.create_session(agent, "prod", user_id="u1", metadata={"k": "v"})
        held = c.create_session(agent, "prod")
        c.acquire_session_lease(held.session_id, "w")  # an item with its lease
        c.create_record(board, {"n": 1}, id="r1", dedupe_key="d1")
        c.create_record(board, {"n": 2}, id="r2")
        assert c.claim_next(board, "w") is not None
        c.register_intent("w", {"agents": [agent]}, description="d")
        frag = uid("f")
        c.create_fragment_version(frag, 0, text="Be kind.", message="m")
        answers: dict[str, list[Any]] = {
            "list_fragments": [f for f in c.list_fragments(limit=500).items if f.name == frag],
            "list_fragment_versions": c.list_fragment_versions(frag).items,
            "list_agents": c.list_agents().items,
            "list_versions": c.list_versions(agent).items,
            "list_releases": c.list_releases(agent, "prod").items,
            "list_sessions": c.list_sessions(agent=agent).items,
            "list_records": c.list_records(board).items,
            "list_intents": c.list_intents(agent=agent).items,
        }
    methods = sorted(n for n in dir(promptd.Client) if n.startswith("list_"))
    assert sorted(answers) == methods, "a list method of Client is not called here"
    assert [] == [m for name, items in answers.items() for m in _mismatch(name, items)]
    assert {x.session_id for x in answers["list_sessions"]} == {s.session_id, held.session_id}
    assert [x.id for x in answers["list_releases"]] == [rel.id]


def test_lists_itemSubscript_stillReadsTheJSON_deprecated(shared_server: Promptd) -> None:
    board = uid("b")
    with runtime(shared_server) as rt:
        rt.create_record(board, {"n": 1}, id="r1")
        item = rt.list_records(board).items[0]
        assert isinstance(item, promptd.boards.Record) and item.id == "r1"
        with pytest.warns(DeprecationWarning, match=r"item\.id, not item\['id'\]"):
            assert item["id"] == "r1"
        with pytest.warns(DeprecationWarning, match="item.nope"):
            assert item.get("nope", 7) == 7

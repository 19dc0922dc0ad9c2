"""Local evaluation against the server itself: for many callers, configs
with tricky templates and releases in each state, LocalPrompts' resolve and
assemble answers equal promptd's own (parsed JSON, strings exact)."""

from __future__ import annotations

from typing import Any

from conftest import RUNTIME, Promptd, uid
from test_client import FAST, admin
from test_local import create_release, rollback, set_percent, wait_for

import promptd

TRICKY: dict[str, Any] = {
    "system": "Hi {{ name }}! {{{name}}} {{x} {{ }} {{1a}} {{\tname\t}} é ☃ <b>&amp;</b> {{other}}",
    "skills": [{"name": "s1 <x>", "instructions": "do {{name}}"}, {"name": "s2", "instructions": ""}],
    "memory": ["m1 {{other}}", "", "m3"],
    "tools": [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}],
    "model": {"name": "gpt-4o", "temperature": 0.25, "max_completion_tokens": 100},
    "variables": {"name": {"required": True}, "other": {"default": "{{name}}"}},
}


def compare(lp: promptd.LocalPrompts, rt: promptd.Client, agent: str, env: str, users: int) -> int:
    checked = 0
    for i in range(users):
        user = f"user-{i}@example.com"
        assert lp.resolve(agent, env, user_id=user) == rt.resolve(agent, env, user_id=user), user
        variables = {"name": f"N{{{{other}}}}{i}"}
        local = lp.assemble(agent, env, variables, user_id=user).body
        remote = rt.assemble(agent, env, variables, user_id=user).body
        assert local == remote, (user, local, remote)
        checked += 1
    return checked


def test_local_equalsServer_forPointersReleasesAndRollbacks(shared_server: Promptd) -> None:
    agent = uid()
    with admin(shared_server) as c, promptd.Client(shared_server.url, RUNTIME, retry=FAST) as rt:
        c.create_version(agent, TRICKY, 0)
        c.set_env(agent, "prod", 1, 0)
        v2 = c.create_version(agent, dict(TRICKY, system="v2 {{name}}", skills=[]), 1).version
        with promptd.LocalPrompts(rt, agents=[agent], flush_interval=3600) as lp:
            n = compare(lp, rt, agent, "prod", 20)
            rel = create_release(c, agent, "prod", v2, 37.5)
            assert wait_for(lambda: lp.resolve(agent, "prod", user_id="u").release is not None)
            n += compare(lp, rt, agent, "prod", 100)
            set_percent(c, rel["id"], 0.01)
            assert wait_for(lambda: lp.resolve(agent, "prod", user_id="u").release.percent == 0.01)  # type: ignore
            n += compare(lp, rt, agent, "prod", 30)
            rollback(c, rel["id"])
            assert wait_for(lambda: lp.resolve(agent, "prod", user_id="u").release is None)
            n += compare(lp, rt, agent, "prod", 10)
            assert lp.stats.server_resolves == 0
            assert n == 160


def test_local_equalsServer_forOverridesAtZeroAndFullPercent(shared_server: Promptd) -> None:
    agent = uid()
    forced_c = [f"user-{i}@example.com" for i in range(0, 5)]
    forced_b = [f"user-{i}@example.com" for i in range(5, 10)]
    with admin(shared_server) as c, promptd.Client(shared_server.url, RUNTIME, retry=FAST) as rt:
        c.create_version(agent, TRICKY, 0)
        c.set_env(agent, "prod", 1, 0)
        v2 = c.create_version(agent, dict(TRICKY, system="v2 {{name}}"), 1).version
        rel = create_release(c, agent, "prod", v2, 0, overrides={"candidate": forced_c, "baseline": forced_b})
        with promptd.LocalPrompts(rt, agents=[agent], flush_interval=3600) as lp:
            for u in forced_c:
                r = lp.resolve(agent, "prod", user_id=u)
                assert r.version == v2 and r.release is not None and r.release.reason == "override"
            compare(lp, rt, agent, "prod", 20)
            set_percent(c, rel["id"], 100)
            assert wait_for(lambda: lp.resolve(agent, "prod", user_id="x").version == v2)
            for u in forced_b:
                r = lp.resolve(agent, "prod", user_id=u)
                assert r.version == 1 and r.release is not None and r.release.reason == "override"
            compare(lp, rt, agent, "prod", 20)


CHAT: dict[str, Any] = dict(
    TRICKY, messages=[{"role": "user", "content": "Example: {{name}}"}, {"role": "assistant", "content": "Sure."}])


def test_local_equalsServer_forOpenAIFormat_configMessages_andSessionHistory(shared_server: Promptd) -> None:
    agent = uid()
    with admin(shared_server) as c, promptd.Client(shared_server.url, RUNTIME, retry=FAST) as rt:
        c.create_version(agent, CHAT, 0)
        c.set_env(agent, "prod", 1, 0)
        s = rt.create_session(agent, "prod", user_id="u1")
        rt.append(s.session_id, [
            {"role": "user", "content": "where is order 7?"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{\"id\":7}"}}]},
            {"role": "tool", "content": "shipped", "tool_call_id": "call_1", "name": "lookup"},
            {"role": "assistant", "content": "It shipped."}], 0)
        turns = [t.to_json() for t in rt.get_session(s.session_id).turns]
        with promptd.LocalPrompts(rt, agents=[agent], flush_interval=3600) as lp:
            for fmt in ("plain", "openai"):
                for max_turns in (None, 1, 2, 3):
                    local = lp.assemble(agent, "prod", {"name": "N"}, session_id=s.session_id, history=turns,
                                        max_history_turns=max_turns, format=fmt)
                    remote = rt.assemble(agent, "prod", {"name": "N"}, session_id=s.session_id, history=True,
                                         max_history_turns=max_turns, format=fmt)
                    assert local.body == remote.body, (fmt, max_turns, local.body, remote.body)
                    assert local.version == remote.version == 1
            body = lp.assemble(agent, "prod", {"name": "N"}, user_id="u2", format="openai").body
            assert body["model"] == "gpt-4o" and body["max_completion_tokens"] == 100 and body["tools"]
            assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant"]

"""Local evaluation's pure parts: murmur3, templates, the arm decision,
assembly order and history cuts (the conformance vectors cover the rest)."""

from __future__ import annotations

from typing import Any

import pytest

from promptd import errors
from promptd.evaluate import AskServer, assemble, bucket, cut_history, murmur3_32, override_id, render, resolve


def test_murmur3_apiVectors() -> None:
    assert murmur3_32(b"hello") == 0x248BFA47
    assert murmur3_32(b"") == 0
    assert bucket("rel_1", "user-1") == 771
    assert bucket("rel_1", "user-2") == 8669
    assert bucket("rel_1", "alice@example.com") == 34
    assert bucket("rel_7f3a", "session-42") == 6397


def test_render_isOnePass_andInvalidPlaceholdersAreLiteral() -> None:
    v = {"x": "{{y}}", "y": "Y", "é": "no"}
    assert render("{{x}}", v) == "{{y}}"
    assert render("{{ x }}|{{\tx\t}}", v) == "{{y}}|{{y}}"
    assert render("{{{x}}}", v) == "{{{y}}}"
    assert render("{{ }} {{1a}} {{x} {{é}} {{undeclared}}", v) == "{{ }} {{1a}} {{x} {{é}} "


def _bundle(release: Any = None, revoked: Any = ()) -> dict[str, Any]:
    cfg = {"system": "v{{n}}", "variables": {"n": {"default": "?"}}, "model": {"name": "m", "temperature": 0}}
    return {"cursor": "7", "agents": {"a": {
        "versions": {"1": {"content_hash": "sha256:1", "config": cfg},
                     "2": {"content_hash": "sha256:2", "config": dict(cfg, system="two")}},
        "envs": {"prod": {"version": 1, "revision": 3, "revoked": list(revoked), "release": release}}}}}


def _release(bp: int, **kw: Any) -> dict[str, Any]:
    return {"id": "rel_1", "state": "running", "revision": 1, "baseline_version": 1, "candidate_version": 2,
            "basis_points": bp, "stickiness": "user", "overrides": {"candidate": [], "baseline": []}, **kw}


def test_resolve_bucketsByUser_edgeAtBasisPoints() -> None:
    assert resolve(_bundle(_release(771)), "a", "prod", "user-1").version == 1  # bucket == bp: baseline
    r = resolve(_bundle(_release(772)), "a", "prod", "user-1")
    assert r.version == 2 and r.release == {"id": "rel_1", "arm": "candidate", "bucket": 771, "percent": 7.72,
                                            "reason": "bucket"}
    nokey = resolve(_bundle(_release(10000)), "a", "prod")
    assert nokey.version == 1 and nokey.release is not None and nokey.release["bucket"] is None


def test_resolve_overridesWinOverTheBucket_andARevokedCandidateServesTheBaseline() -> None:
    rel = _release(0, overrides={"candidate": [override_id("rel_1", "vip")], "baseline": []})
    r = resolve(_bundle(rel), "a", "prod", "vip")
    assert r.version == 2 and r.release is not None and r.release["reason"] == "override"
    r = resolve(_bundle(_release(10000), revoked=[2]), "a", "prod", "user-1")
    assert r.version == 1 and r.release is not None and r.release["arm"] == "baseline"


def test_resolve_pins_servedOrAskTheServer() -> None:
    r = resolve(_bundle(_release(0)), "a", "prod", "user-1", "s1", pinned_version=2)
    assert r.pinned and r.version == 2 and r.release is not None and r.release["reason"] == "pinned"
    with pytest.raises(AskServer):
        resolve(_bundle(revoked=[2]), "a", "prod", None, "s1", pinned_version=2)
    with pytest.raises(AskServer):
        resolve(_bundle(), "a", "prod", None, "s1", pinned_version=9)


def test_resolve_unknownAgentOrEnv_areTheServersErrors() -> None:
    with pytest.raises(errors.AgentNotFound):
        resolve(_bundle(), "b", "prod")
    with pytest.raises(errors.NoPointer):
        resolve(_bundle(), "a", "dev")
    with pytest.raises(errors.InvalidID):
        resolve(_bundle(), "a", "prod", user_id="bad\x00id")


def test_assemble_openai_modelKeysAtTheTop_noToolsKey() -> None:
    body = assemble(_bundle(), "a", "prod", {"n": "1"}, format="openai")
    assert body == {"model": "m", "temperature": 0, "messages": [{"role": "system", "content": "v1"}]}
    with pytest.raises(errors.InvalidVariable):
        assemble(_bundle(), "a", "prod", {"n": 1})


def test_cutHistory_neverStartsWithToolAnswers() -> None:
    turns = [{"role": "user"}, {"role": "assistant", "tool_calls": []}, {"role": "tool"}, {"role": "tool"},
             {"role": "assistant"}]
    assert [t["role"] for t in cut_history(turns, 3)] == ["assistant"]
    assert cut_history(turns, 10) == turns

"""The repository's conformance vectors (testdata/conformance/vectors.json,
or PROMPTD_CONFORMANCE_VECTORS while developing): every vector's bundle
and request, resolved and assembled locally, must give the expected answer
(parsed JSON compared by deep equality, strings exact)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from promptd import PromptdError, evaluate


def vectors_path() -> Path:
    p = ROOT / "testdata" / "conformance" / "vectors.json"
    if p.exists():
        return p
    env = os.environ.get("PROMPTD_CONFORMANCE_VECTORS")
    if env:
        return Path(env)
    pytest.fail(f"no conformance vectors: {p} is missing and PROMPTD_CONFORMANCE_VECTORS is unset")


def _error(err: PromptdError) -> dict[str, Any]:
    return {"code": err.code, "status": err.status, **err.fields}


def _same(want: dict[str, Any], got: dict[str, Any]) -> bool:
    """testdata/conformance/README.md's comparison: an error by code and status (and field,
    variable when given), "ask the server" by its reason, an answer by deep
    equality of parsed JSON."""
    if "error" in want:
        e = got.get("error")
        return isinstance(e, dict) and all(e.get(k) == v for k, v in want["error"].items())
    if "server" in want:
        return got.get("server") is True and got.get("reason") == want.get("reason")
    return got == want


def _run(f: Any) -> dict[str, Any]:
    try:
        out: dict[str, Any] = f()
        return out
    except evaluate.AskServer as ask:
        return {"server": True, "reason": ask.reason}
    except PromptdError as err:
        return {"error": _error(err)}


def run_vector(v: dict[str, Any]) -> list[str]:
    req, expect, bundle = v["request"], v["expect"], v["bundle"]
    args = dict(agent=req["agent"], env=req["env"], user_id=req.get("user_id"), session_id=req.get("session_id"),
                pinned_version=req.get("pinned_version"))
    problems = []
    if "resolve" in expect:
        got = _run(lambda: evaluate.resolve(bundle, **args).to_json())
        if not _same(expect["resolve"], got):
            problems.append(f"resolve: want {json.dumps(expect['resolve'])}\n got {json.dumps(got)}")
    if "assembled" in expect:
        got = _run(lambda: evaluate.assemble(bundle, variables=req.get("variables"), history=req.get("history"),
                                             max_history_turns=req.get("max_history_turns"),
                                             format=req.get("format") or "plain", **args))
        if not _same(expect["assembled"], got):
            problems.append(f"assembled: want {json.dumps(expect['assembled'])}\n got {json.dumps(got)}")
    return problems


def test_conformance_everyVector_matchesLocally(capsys: pytest.CaptureFixture[str]) -> None:
    doc = json.loads(vectors_path().read_text())
    vectors = doc["vectors"]
    failures = {}
    for v in vectors:
        p = run_vector(v)
        if p:
            failures[v["name"]] = p
    passed = len(vectors) - len(failures)
    with capsys.disabled():
        print(f"\npython: {passed}/{len(vectors)} vectors")
    assert not failures, json.dumps(failures, indent=1)[:6000]
    assert len(vectors) >= 40

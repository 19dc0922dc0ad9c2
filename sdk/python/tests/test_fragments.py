"""Fragments in local evaluation: what the evaluator released before
fragments does with a bundle that pins them (tests/released holds that
module unchanged), and why the bundle's format number exists: today's
evaluator refuses a format it does not know and asks the server."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from test_conformance import vectors_path

from promptd import evaluate


def _vectors() -> dict[str, Any]:
    return {v["name"]: v for v in json.loads(vectors_path().read_text())["vectors"]}


def _released() -> Any:
    path = Path(__file__).parent / "released" / "evaluate_before_fragments.py"
    spec = importlib.util.spec_from_file_location("promptd.evaluate_before_fragments", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def test_released_evaluator_rendersIncludesAsLiteralText() -> None:
    """The evaluator before fragments ignores a config's "fragments" and
    sends {{> alias}} to the model as it is, and a {"fragment": alias}
    message as role None: a wrong prompt, silently. Old SDKs predate the
    bundle's format field, so nothing can stop them but the upgrade."""
    v = _vectors()["fragment/text-in-system-skills-memory-messages"]
    old = _released().assemble(v["bundle"], "support", "prod")
    system = old["messages"][0]["content"]
    assert system.startswith("You help. {{> safety}}"), system
    new = evaluate.assemble(v["bundle"], "support", "prod")
    assert new == v["expect"]["assembled"]
    assert "{{>" not in new["messages"][0]["content"]

    m = _vectors()["fragment/messages-fragment-inserted"]
    old = _released().assemble(m["bundle"], "support", "prod", variables={"customer": "Ada"})
    assert [x["role"] for x in old["messages"]] == ["system", "system", "None", "user"]


def test_unknownBundleFormat_asksTheServer_whereTheReleasedEvaluatorAnswered() -> None:
    v = _vectors()["format/unknown-bundle-format-asks-server"]
    assert v["bundle"]["format"] == 3
    with pytest.raises(evaluate.AskServer) as ask:
        evaluate.resolve(v["bundle"], "support", "prod")
    assert ask.value.reason == "format_unknown"
    with pytest.raises(evaluate.AskServer):
        evaluate.assemble(v["bundle"], "support", "prod")
    # The released evaluator knows no format field: it answers from it.
    assert _released().resolve(v["bundle"], "support", "prod").version == 1
    # Formats 1 (or none) and 2 are answered.
    for f in (1, 2):
        b = dict(v["bundle"], format=f)
        assert evaluate.resolve(b, "support", "prod").version == 1
    b = dict(v["bundle"])
    del b["format"]
    assert evaluate.resolve(b, "support", "prod").version == 1


def test_includeValue_isText_andUnknownAliasIsLiteral() -> None:
    frags = {"s": {"text": "S{{x}}", "fragments": {}}}
    assert evaluate.render("a {{> s}} {{x}} {{>nope}}", {"x": "{{> s}}"}, frags) == "a S{{> s}} {{> s}} {{>nope}}"
    assert evaluate.render("{{{> s}}", {"x": "1"}, frags) == "{S1"


def test_localPrompts_withABundleOfUnknownFormat_asksPromptd() -> None:
    """LocalPrompts answers nothing locally from a format-3 bundle: each
    resolve goes to GET .../prompt (a scripted transport stands for promptd)."""
    import httpx

    import promptd
    from promptd._http import RetryPolicy

    cfg = {"system": "from the bundle"}
    bundle = {"format": 3, "cursor": "1", "agents": {"a": {
        "versions": {"1": {"content_hash": "sha256:1", "config": cfg}},
        "envs": {"prod": {"version": 1, "revision": 1, "revoked": [], "release": None}}}}}
    calls: list[str] = []

    def handler(req: httpx.Request) -> httpx.Response:
        calls.append(req.url.path)
        if req.url.path == "/v1/bundle":
            return httpx.Response(200, json=bundle, headers={"ETag": '"b1"'})
        if req.url.path == "/v1/agents/a/envs/prod/prompt":
            return httpx.Response(200, json={"agent": "a", "env": "prod", "version": 1, "content_hash": "sha256:1",
                                             "config": {"system": "from promptd"}, "release": None, "pinned": False,
                                             "repinned_from": None})
        return httpx.Response(404, json={"code": "not_found", "status": 404, "detail": "x", "title": "Not found",
                                         "type": "urn:promptd:problem:not_found"})

    fast = RetryPolicy(attempts=1, base=0.01, cap=0.02, max_retry_after=0.02)
    for fmt, system, asked in ((3, "from promptd", 1), (2, "from the bundle", 0)):
        bundle["format"] = fmt
        calls.clear()
        c = promptd.Client("http://promptd.test", "t", retry=fast, transport=httpx.MockTransport(handler))
        lp = promptd.LocalPrompts(c, flush_interval=3600, stream=False, poll_interval=3600).start()
        try:
            r = lp.resolve("a", "prod")
            assert r.config["system"] == system
            assert calls.count("/v1/agents/a/envs/prod/prompt") == asked
            assert lp.stats.server_resolves == asked
        finally:
            lp.close()

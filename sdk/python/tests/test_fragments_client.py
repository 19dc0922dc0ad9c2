"""The fragment routes through Client and AsyncClient against a real promptd:
versions (a stale base is VersionConflict with the latest), a dry run and a
proposal that write nothing, env pointers (a stale revision is
RevisionConflict), the list, and used-by of an agent version that pins one."""

from __future__ import annotations

import asyncio
from typing import Optional

import pytest
from conftest import ADMIN, RUNTIME, Promptd, uid

import promptd
from promptd import errors
from promptd.aio import AsyncClient
from promptd.client import Fragment


def test_fragments_versionsEnvsUsedBy(shared_server: Promptd) -> None:
    name, agent = uid("frag"), uid("agent")
    with promptd.Client(shared_server.url, ADMIN) as c, promptd.Client(shared_server.url, RUNTIME) as rt:
        v1 = c.create_fragment_version(name, 0, text="Never share secrets of {{company}}.",
                                       variables={"company": {"default": "ACME"}}, message="first")
        assert (v1.name, v1.version, v1.message, v1.created_by) == (name, 1, "first", "admin")
        assert v1.text == "Never share secrets of {{company}}." and v1.messages is None
        assert v1.content_hash.startswith("sha256:") and v1.variables == {"company": {"default": "ACME"}}

        with pytest.raises(errors.VersionConflict) as stale:
            c.create_fragment_version(name, 0, text="other")
        assert stale.value.latest_version == 1

        chk = c.create_fragment_version(name, 1, text="Never share secrets of {{company}}.",
                                        variables={"company": {"default": "ACME"}}, dry_run=True)
        assert chk.dry_run and chk.version == 2 and chk.content_hash == v1.content_hash
        with pytest.raises(ValueError):
            c.create_fragment_version(name, 1)

        e = c.put_fragment_env(name, "prod", 1, 0)
        assert (e.name, e.env, e.version, e.revision) == (name, "prod", 1, 1)
        with pytest.raises(errors.RevisionConflict):
            c.put_fragment_env(name, "prod", 1, 0)
        got = rt.get_fragment_env(name, "prod")
        assert (got.version, got.revision, got.updated_by) == (1, 1, "admin")
        with pytest.raises(errors.NotFound):
            rt.get_fragment_env(name, "staging")
        with pytest.raises(errors.Forbidden):  # writes are admin-only
            rt.put_fragment_env(name, "prod", 1, 1)

        c.create_version(agent, {"system": "You help. {{> safety}}", "fragments": {"safety": {"name": name, "env": "prod"}}}, 0)
        prop = c.create_fragment_version(name, 1, text="Never share anything.", propose=True)
        assert prop.dry_run and prop.version == 2
        assert [(p.agent, p.version, p.alias, p.env) for p in prop.proposal] == [(agent, 1, "safety", "prod")]
        assert [v.version for v in rt.list_fragment_versions(name).items] == [1]  # the proposal wrote nothing

        used = rt.fragment_used_by(name, 1)
        assert [(u.agent, u.version) for u in used.items] == [(agent, 1)]
        assert rt.get_fragment_version(name, 1).content_hash == v1.content_hash
        with pytest.raises(errors.NotFound):
            rt.get_fragment_version(name, 9)

        msgs = c.create_fragment_version(name + "m", 0, messages=[{"role": "user", "content": "hi"}])
        assert msgs.messages == [{"role": "user", "content": "hi"}] and msgs.text is None

        listed: dict[str, Fragment] = {}
        cursor: Optional[str] = None
        while True:
            page = rt.list_fragments(limit=2, cursor=cursor)
            listed.update({f.name: f for f in page.items})
            if not page.next:
                break
            cursor = page.next
        f = listed[name]
        assert (f.latest_version, f.latest_content_hash, f.envs) == (1, v1.content_hash, {"prod": 1})
        assert listed[name + "m"].latest_version == 1


def test_fragments_asyncClient(shared_server: Promptd) -> None:
    name = uid("frag")

    async def main() -> None:
        async with AsyncClient(shared_server.url, ADMIN) as c:
            v1 = await c.create_fragment_version(name, 0, text="Be kind.")
            v2 = await c.create_fragment_version(name, v1.version, text="Be very kind.")
            assert (v1.version, v2.version) == (1, 2) and v2.content_hash != v1.content_hash
            e = await c.put_fragment_env(name, "prod", 2, 0)
            assert (await c.get_fragment_env(name, "prod")).revision == e.revision == 1
            assert [v.version for v in (await c.list_fragment_versions(name)).items] == [2, 1]
            assert (await c.get_fragment_version(name, 1)).text == "Be kind."
            assert (await c.fragment_used_by(name, 2)).items == []
            with pytest.raises(errors.VersionConflict):
                await c.create_fragment_version(name, 1, text="late")
            assert any(f.name == name for f in (await c.list_fragments(limit=500)).items)

    asyncio.run(main())

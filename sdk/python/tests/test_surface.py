"""The two clients have one surface: every public method of Client is on
AsyncClient and the other way round, with the same parameters (names,
kinds and defaults); only ``async`` differs. A method added to one client
alone fails here."""

from __future__ import annotations

import inspect

import promptd
from promptd.aio import AsyncClient


def _public(cls: type) -> dict[str, inspect.Signature]:
    return {name: inspect.signature(fn) for name, fn in inspect.getmembers(cls, inspect.isfunction)
            if not name.startswith("_")}


def _params(sig: inspect.Signature) -> list[tuple[str, object, object]]:
    return [(p.name, p.kind, p.default) for p in sig.parameters.values()]


def test_clients_haveTheSamePublicMethods() -> None:
    sync, aio = _public(promptd.Client), _public(AsyncClient)
    assert sorted(set(sync) - set(aio)) == [], "on Client only"
    assert sorted(set(aio) - set(sync)) == [], "on AsyncClient only"


def test_clients_methodsTakeTheSameParameters() -> None:
    sync, aio = _public(promptd.Client), _public(AsyncClient)
    differ = {name: (_params(sync[name]), _params(aio[name])) for name in set(sync) & set(aio)
              if _params(sync[name]) != _params(aio[name])}
    assert differ == {}

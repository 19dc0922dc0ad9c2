"""Board batches (api/openapi.yaml, POST /v1/boards/{board}/batches): many
creates and updates of one board in one transaction, answered with the
commit proof (per item the status, the revision before and after and the
content hash, or the conflict with the record's current revision, hash
and fence).

``client.apply_batch(board, [create_item(...), update_item(...)])`` sends
them. With ``mode="all_or_nothing"`` (the default) an item that cannot be
written writes nothing and raises :class:`~promptd.errors.BatchRejected`
with every item's result; ``mode="partial"`` writes the others and the
proof says which failed. An update with ``merge=True`` against an older
``expected_revision`` is merged over the changes made since (three-way, by
JSON path); an overlap is a ``conflict`` item (or, for a single PATCH,
:class:`~promptd.errors.MergeConflict`) with per path the base, ours and
theirs values.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence, Union

import httpx

from ._calls import seg
from ._http import Call, decode
from .intents import RefLike, ref_json


class _Absent:
    """The value of a side a merge conflict does not have (deleted, or
    never there), told apart from JSON null."""

    _it: Optional["_Absent"] = None

    def __new__(cls) -> "_Absent":
        if cls._it is None:
            cls._it = super().__new__(cls)
        return cls._it

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()
"""A MergeConflictPath side that is absent (``base is ABSENT``); as an
argument, a member left out (where None would send JSON null)."""

PathStep = Union[str, dict[str, str]]


def _opt_int(v: Any) -> Optional[int]:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _opt_str(v: Any) -> Optional[str]:
    return v if isinstance(v, str) else None


@dataclass(frozen=True)
class MergeConflictPath:
    """One path both sides changed differently. A step is a member name, or
    ``{key: value}`` for an element of a keyed array (``{"id": "7"}``).
    ``base``, ``ours``, ``theirs`` are the values there, ABSENT where that
    side has none."""

    path: list[PathStep]
    base: Any = ABSENT
    ours: Any = ABSENT
    theirs: Any = ABSENT

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "MergeConflictPath":
        steps = d.get("path")
        return MergeConflictPath(
            path=[s if isinstance(s, str) else {str(k): str(v) for k, v in s.items()}
                  for s in steps if isinstance(s, (str, Mapping))] if isinstance(steps, list) else [],
            base=d.get("base", ABSENT), ours=d.get("ours", ABSENT), theirs=d.get("theirs", ABSENT))


def merge_paths(v: Any) -> list[MergeConflictPath]:
    return [MergeConflictPath.from_json(x) for x in v if isinstance(x, Mapping)] if isinstance(v, list) else []


@dataclass(frozen=True)
class BatchConflict:
    """Why an item was not written: ``code`` is a problem code
    (revision_conflict, stale_fence, merge_conflict, ...) with what the
    record is now."""

    code: str
    detail: str
    current_revision: Optional[int] = None
    content_hash: Optional[str] = None
    current_fence: Optional[int] = None
    state: Optional[str] = None
    field: Optional[str] = None
    conflicts: list[MergeConflictPath] = dataclasses.field(default_factory=list)

    @staticmethod
    def from_json(d: Any) -> Optional["BatchConflict"]:
        if not isinstance(d, Mapping):
            return None
        return BatchConflict(code=str(d.get("code", "")), detail=str(d.get("detail", "")),
                             current_revision=_opt_int(d.get("current_revision")),
                             content_hash=_opt_str(d.get("content_hash")),
                             current_fence=_opt_int(d.get("current_fence")), state=_opt_str(d.get("state")),
                             field=_opt_str(d.get("field")), conflicts=merge_paths(d.get("conflicts")))


@dataclass(frozen=True)
class BatchItemResult:
    """One item's part of the proof, in request order: ``status``
    created|exists|updated|merged|conflict|invalid."""

    index: int
    op: str
    id: str
    status: str
    revision_before: int
    revision_after: int
    content_hash: Optional[str] = None
    conflict: Optional[BatchConflict] = None

    @property
    def written(self) -> bool:
        return self.status in ("created", "updated", "merged")

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "BatchItemResult":
        return BatchItemResult(index=int(d.get("index") or 0), op=str(d.get("op", "")), id=str(d.get("id", "")),
                               status=str(d.get("status", "")), revision_before=int(d.get("revision_before") or 0),
                               revision_after=int(d.get("revision_after") or 0),
                               content_hash=_opt_str(d.get("content_hash")),
                               conflict=BatchConflict.from_json(d.get("conflict")))


def item_results(v: Any) -> list[BatchItemResult]:
    return [BatchItemResult.from_json(x) for x in v if isinstance(x, Mapping)] if isinstance(v, list) else []


@dataclass(frozen=True)
class BatchSummary:
    created: int = 0
    exists: int = 0
    updated: int = 0
    merged: int = 0
    conflicts: int = 0
    invalid: int = 0

    @staticmethod
    def from_json(d: Any) -> "BatchSummary":
        if not isinstance(d, Mapping):
            return BatchSummary()
        return BatchSummary(**{f.name: int(d.get(f.name) or 0) for f in dataclasses.fields(BatchSummary)})


@dataclass(frozen=True)
class BoardBatch:
    """An applied batch and its commit proof (also read back by id)."""

    id: str
    board: str
    mode: str
    batch_fingerprint: str
    results: list[BatchItemResult]
    summary: BatchSummary
    created_by: str
    created_at: str
    intent_id: Optional[str] = None
    raw: dict[str, Any] = dataclasses.field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "BoardBatch":
        return BoardBatch(id=str(d.get("id", "")), board=str(d.get("board", "")), mode=str(d.get("mode", "")),
                          batch_fingerprint=str(d.get("batch_fingerprint", "")), results=item_results(d.get("results")),
                          summary=BatchSummary.from_json(d.get("summary")), created_by=str(d.get("created_by", "")),
                          created_at=str(d.get("created_at", "")), intent_id=_opt_str(d.get("intent_id")), raw=dict(d))


# Items.
def create_item(payload: Any, *, id: Optional[str] = None, priority: Optional[int] = None,
                dedupe_key: Optional[str] = None) -> dict[str, Any]:
    """A create: an id (or live dedupe_key) the board has is ``exists`` and
    writes nothing, so a retried batch is safe."""
    out: dict[str, Any] = {"op": "create", "payload": payload}
    for k, v in (("id", id), ("priority", priority), ("dedupe_key", dedupe_key)):
        if v is not None:
            out[k] = v
    return out


def update_item(id: str, expected_revision: int, *, payload: Any = ABSENT, state: Optional[str] = None,
                fence: Optional[int] = None, merge: bool = False, base_payload: Any = ABSENT) -> dict[str, Any]:
    """A compare-and-set on ``expected_revision`` (and a claimed record's
    ``fence``); with ``merge=True`` the payload is merged over the changes
    made since, from ``base_payload`` (the payload read at that revision)
    or the one the board kept."""
    out: dict[str, Any] = {"op": "update", "id": id, "expected_revision": expected_revision}
    if payload is not ABSENT:
        out["payload"] = payload
    if base_payload is not ABSENT:
        out["base_payload"] = base_payload
    for k, v in (("state", state), ("fence", fence)):
        if v is not None:
            out[k] = v
    if merge:
        out["merge"] = True
    return out


# Call builders (sent by Client and AsyncClient).
def _batch(r: httpx.Response) -> BoardBatch:
    return BoardBatch.from_json(decode(r) or {})


def apply_batch(board: str, items: Sequence[Mapping[str, Any]], mode: str, intent: Optional[RefLike],
                batch_fingerprint: Optional[str]) -> Call[BoardBatch]:
    body: dict[str, Any] = {"mode": mode, "items": [dict(it) for it in items]}
    ref = ref_json(intent)
    if ref is not None:
        body["intent"] = ref
    if batch_fingerprint is not None:
        body["batch_fingerprint"] = batch_fingerprint
    return Call("POST", f"/v1/boards/{seg(board)}/batches", _batch, json=body, idempotent=True)


def get_batch(board: str, batch_id: str) -> Call[BoardBatch]:
    return Call("GET", f"/v1/boards/{seg(board)}/batches/{seg(batch_id)}", _batch)

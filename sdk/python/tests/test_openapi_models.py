"""The SDK's wire models against the HTTP contract, api/openapi.yaml.

MIRRORS names, for every public model class, the schema (or schemas) it
mirrors. A class's dataclass fields must be that schema's properties, by
name, and a field may be None (``Optional[...]``, or a default of None)
exactly when the schema lets the property be null or absent (a field typed
Any, without a None default, says nothing about None and is not checked for
it). What differs on purpose is listed beside the class with the reason; an exception that no
longer applies fails too. $ref, allOf (members of every part) and
oneOf/anyOf (members of any branch, required in all) are resolved.
No promptd is needed: this reads files only."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import types
import typing
from dataclasses import dataclass
from typing import Any, Mapping, Optional

import pytest
import yaml

from conftest import ROOT
import promptd
from promptd import batches, boards, intents, models
from promptd.aio import AsyncClient

SPEC_PATH = ROOT / "api" / "openapi.yaml"


@dataclass(frozen=True)
class Mirror:
    # Pointers under #/components/schemas ("Env", "StateEntries/additionalProperties"), or from the
    # document's root ("#/paths/...").
    # Several: the class reads (or writes) each of them; a property of one only may be absent.
    schemas: tuple[str, ...]
    # Model fields that are not on the wire -> why.
    client_only: Mapping[str, str] = dataclasses.field(default_factory=dict)
    # Schema properties the model leaves out -> why.
    not_carried: Mapping[str, str] = dataclasses.field(default_factory=dict)
    # Fields whose None-ness differs from the schema's -> why.
    nullability: Mapping[str, str] = dataclasses.field(default_factory=dict)


# GET /v1/intents answers an inline schema (a pointer from the document's root).
LIST_INTENTS = "#/paths/~1v1~1intents/get/responses/200/content/application~1json/schema"

# Every model keeps the decoded answer whole in ``raw`` (fields of a newer server).
EVERY_CLIENT_ONLY = {"raw": "the decoded JSON, kept whole"}

MIRRORS: dict[type, Mirror] = {
    models.Trace: Mirror(
        ("Trace",),
        nullability={"percent": "the same class carries the Promptd-Release header's trace (format=openai), "
                                "which has no percent"}),
    models.Resolved: Mirror(("Prompt",)),
    models.Assembled: Mirror(
        ("Assembled",),
        client_only={"format": "the format asked for (plain or openai): which schema body follows",
                     "body": "the answer as sent: Assembled for plain, OpenAIChatRequest for openai"},
        # The class wraps either format's answer; only what both give is a field.
        not_carried={k: "in body (format=plain); the openai body has no such member"
                     for k in ("content_hash", "messages", "pinned", "repinned_from")},
        nullability={"version": "for format=openai it is read from the Promptd-Version header: None if absent"}),
    models.Turn: Mirror(("Turn", "TurnInput")),  # read from a session, and appended (to_json)
    models.LeaseInfo: Mirror(("LeaseInfo",)),
    models.SessionSummary: Mirror(("SessionSummary",)),
    models.Agent: Mirror(("Agent",)),
    models.Session: Mirror(
        ("SessionDetail", "Session"),  # GET answers the detail; create and close the session alone
        nullability={"turns": "[] when the answer has none (create, close)",
                     "state_keys": "[] when the answer has none (create, close)"}),
    models.Appended: Mirror(("Appended",)),
    models.StateEntry: Mirror(
        ("StateEntries/additionalProperties",),
        client_only={"key": "the entry's key: the map's key in GET .../state (StateWritten.key on a write)"}),
    models.LeaseGrant: Mirror(("SessionLease",)),
    models.Leases: Mirror(("Leases",)),
    models.Version: Mirror(("Version",)),
    models.VersionMerge: Mirror(("VersionMerge",)),
    models.EnvPointer: Mirror(("Env",)),
    models.Release: Mirror(("Release",)),
    models.Page: Mirror(("VersionList", "AgentList", "ReleaseList", "FeedPage", "ExposureList", "RecordList",
                         "SessionList", "FragmentList", "FragmentVersionList")),
    promptd.FragmentVersion: Mirror(
        ("FragmentVersion",),
        nullability={"created_at": "'' when absent (a dry run or a proposal creates nothing)",
                     "dry_run": "False when absent (only a dry run's answer says it)",
                     "proposal": "[] when absent (only a proposal's answer has it)"}),
    promptd.Fragment: Mirror(("FragmentSummary",)),
    promptd.FragmentEnv: Mirror(("FragmentEnv",)),
    promptd.FragmentUse: Mirror(("FragmentUse",)),
    boards.Record: Mirror(("Record",)),
    boards.Board: Mirror(("Board",)),
    intents.RecordScope: Mirror(
        ("IntentScope/properties/records/items",),
        nullability={k: "absent reads as [] (the scope names none)" for k in ("ids", "prefixes")}),
    intents.IntentScope: Mirror(
        ("IntentScope",),
        nullability={k: "absent reads as [] (the scope names none)" for k in ("agents", "envs", "boards", "records")}),
    intents.IntentRef: Mirror(("IntentRef",)),
    intents.Intent: Mirror(("Intent",)),
    intents.RegisteredIntent: Mirror(("RegisteredIntent",)),
    intents.IntentPage: Mirror((LIST_INTENTS,)),
    batches.MergeConflictPath: Mirror(("MergeConflictPath",)),
    batches.BatchConflict: Mirror(
        ("BoardBatchItemResult/properties/conflict",),
        nullability={"conflicts": "[] when the conflict is not a merge_conflict"}),
    batches.BatchItemResult: Mirror(("BoardBatchItemResult",)),
    batches.BatchSummary: Mirror(("BoardBatchSummary",)),
    batches.BoardBatch: Mirror(("BoardBatch",)),
}


def load_spec() -> dict[str, Any]:
    with open(SPEC_PATH, encoding="utf-8") as f:
        spec: dict[str, Any] = yaml.safe_load(f)
    return spec


def pointer(spec: Mapping[str, Any], ref: str) -> Any:
    node: Any = spec
    for part in ref.lstrip("#/").split("/"):
        node = node[int(part)] if isinstance(node, list) else node[part.replace("~1", "/").replace("~0", "~")]
    return node


def deref(spec: Mapping[str, Any], node: Any) -> Any:
    while isinstance(node, Mapping) and "$ref" in node:
        node = pointer(spec, node["$ref"])
    return node


def is_null(node: Any) -> bool:
    return isinstance(node, Mapping) and node.get("type") == "null"


@dataclass
class Shape:
    props: dict[str, list[Any]]  # name -> its schema in each part or branch that has it
    required: set[str]


def shape(spec: Mapping[str, Any], node: Any) -> Shape:
    """The members of an object schema: its own, every allOf part's, and
    oneOf/anyOf's (a member of any branch, required when every branch requires
    it); a null branch is left out (it makes the object nullable, not smaller)."""
    node = deref(spec, node)
    out = Shape({k: [v] for k, v in (node.get("properties") or {}).items()}, set(node.get("required") or ()))

    def add(s: Shape) -> None:
        for k, v in s.props.items():
            out.props.setdefault(k, []).extend(v)

    for part in node.get("allOf") or ():
        s = shape(spec, part)
        add(s)
        out.required |= s.required
    branches = [shape(spec, b) for b in (node.get("oneOf") or []) + (node.get("anyOf") or [])
                if not is_null(deref(spec, b))]
    for s in branches:
        add(s)
    if branches:
        out.required |= set.intersection(*(s.required for s in branches))
    return out


_CONSTRAINTS = {"type", "enum", "const", "oneOf", "anyOf", "allOf", "properties", "items", "$ref", "not"}


def nullable(spec: Mapping[str, Any], node: Any) -> bool:
    """Whether a value of this schema may be JSON null."""
    node = deref(spec, node)
    if not isinstance(node, Mapping) or not _CONSTRAINTS & node.keys():
        return True  # any JSON ({} or a description only)
    t = node.get("type")
    if t == "null" or (isinstance(t, list) and "null" in t):
        return True
    if "enum" in node and None in node["enum"]:
        return True
    if any(nullable(spec, b) for b in (node.get("oneOf") or []) + (node.get("anyOf") or [])):
        return True
    parts = node.get("allOf") or []
    return bool(parts) and all(nullable(spec, p) for p in parts) and "type" not in node


def may_be_none(hint: Any) -> bool:
    if typing.get_origin(hint) in (typing.Union, getattr(types, "UnionType", typing.Union)):
        return type(None) in typing.get_args(hint)
    return False


def drift(cls: type, mirror: Mirror, spec: Mapping[str, Any]) -> list[str]:
    """What differs between the model class and the schemas it mirrors (besides
    the listed exceptions), and each listed exception that no longer applies."""
    name = cls.__name__
    where = ", ".join(mirror.schemas)
    shapes = [shape(spec, pointer(spec, s if s.startswith("#/") else "#/components/schemas/" + s))
              for s in mirror.schemas]
    props: dict[str, list[Any]] = {}
    for s in shapes:
        for k, v in s.props.items():
            props.setdefault(k, []).extend(v)
    required = set.intersection(*(s.required for s in shapes))
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    client_only = {**EVERY_CLIENT_ONLY, **mirror.client_only}
    out: list[str] = []
    for k in mirror.client_only:
        if k not in fields or k in props:
            out.append(f"{name}: client-only {k!r} is {'on the wire' if k in props else 'no field'}: drop the exception")
    for k in mirror.not_carried:
        if k not in props or k in fields:
            out.append(f"{name}: not-carried {k!r} is {'a field' if k in fields else 'not in ' + where}: drop the exception")
    wire = {k: f for k, f in fields.items() if k not in client_only}
    for k in sorted(props.keys() - wire.keys() - mirror.not_carried.keys()):
        out.append(f"{name}: {where} has {k!r}, the model has no such field")
    for k in sorted(wire.keys() - props.keys()):
        out.append(f"{name}: field {k!r} is not a property of {where}")
    for k in sorted(wire.keys() & props.keys()):
        f = wire[k]
        schema_none = k not in required or any(nullable(spec, p) for p in props[k])
        if hints[k] is Any and f.default is not None:
            continue  # untyped: says nothing about None
        model_none = may_be_none(hints[k]) or f.default is None
        if (schema_none != model_none) != (k in mirror.nullability):
            if k in mirror.nullability:
                out.append(f"{name}.{k}: None-ness agrees with {where} now: drop the exception")
            elif schema_none:
                out.append(f"{name}.{k}: {where} lets it be null or absent, the model never holds None (make it Optional)")
            else:
                out.append(f"{name}.{k}: {where} requires it non-null, the model lets it be None")
    for k in mirror.nullability:
        if k not in wire or k not in props:
            out.append(f"{name}: nullability exception {k!r} names no field of both: drop it")
    return out


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    return load_spec()


@pytest.mark.parametrize("cls", list(MIRRORS), ids=lambda c: c.__name__)
def test_model_matchesItsSchema(spec: dict[str, Any], cls: type) -> None:
    assert drift(cls, MIRRORS[cls], spec) == []


def test_everyPublicModel_isInTheTable() -> None:
    public = {c for n, c in inspect.getmembers(models, inspect.isclass)
              if c.__module__ == models.__name__ and not n.startswith("_")}
    for mod in (boards, intents, batches):
        public |= {c for n, c in inspect.getmembers(mod, dataclasses.is_dataclass)
                   if isinstance(c, type) and c.__module__ == mod.__name__ and not n.startswith("_")}
    assert sorted(c.__name__ for c in public - MIRRORS.keys()) == []
    assert len(public) >= 25


# Every list method of both clients (list_*) is named by its route's operationId
# (list_sessions: listSessions); its answer is a page whose items are a model
# class that mirrors the items of the schema the route answers (200).
def list_routes(spec: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for path, item in spec["paths"].items():
        get = item.get("get") or {}
        op = get.get("operationId", "")
        if not op.startswith("list"):
            continue
        ok = deref(spec, get["responses"]["200"])
        body = deref(spec, ok["content"]["application/json"]["schema"])
        items = body["properties"]["items"]["items"]
        out[op] = items.get("$ref", f"{path}: list items without a $ref")
    return out


def page_item(answer: Any) -> Any:
    """The items' type of a page type: Page[X] -> X; a page class with ``items: list[X]`` -> X."""
    args = typing.get_args(answer)
    if args:
        return args[0]
    hints = typing.get_type_hints(answer) if isinstance(answer, type) else {}
    items = typing.get_args(hints.get("items"))
    return items[0] if items else None


def list_method_drift(cls: type, spec: Mapping[str, Any]) -> list[str]:
    routes = list_routes(spec)
    out: list[str] = []
    for name, fn in inspect.getmembers(cls, inspect.isfunction):
        if not name.startswith("list_"):
            continue
        op = "list" + "".join(w.title() for w in name.split("_")[1:])
        where = f"{cls.__name__}.{name}"
        if op not in routes:
            out.append(f"{where}: no GET route has operationId {op}")
            continue
        item = page_item(typing.get_type_hints(fn).get("return"))
        if not (isinstance(item, type) and item in MIRRORS):
            out.append(f"{where}: its page's items are {item!r}, not a model class of the table")
            continue
        ref = routes[op].removeprefix("#/components/schemas/")
        out.extend(f"{where} items: {d}" for d in drift(item, dataclasses.replace(MIRRORS[item], schemas=(ref,)), spec))
    return out


@pytest.mark.parametrize("cls", [promptd.Client, AsyncClient], ids=lambda c: c.__name__)
def test_listMethods_answerPagesOfTheirRoutesItems(spec: dict[str, Any], cls: type) -> None:
    methods = [n for n, _ in inspect.getmembers(cls, inspect.isfunction) if n.startswith("list_")]
    assert len(methods) >= 6, methods
    assert list_method_drift(cls, spec) == []


# Controls: the check is able to fail.
def test_drift_renamedSchemaProperty_isReported(spec: dict[str, Any]) -> None:
    drifted = copy.deepcopy(spec)
    v = drifted["components"]["schemas"]["Version"]
    v["properties"]["author"] = v["properties"].pop("created_by")
    v["required"] = ["author" if r == "created_by" else r for r in v["required"]]
    assert drift(models.Version, MIRRORS[models.Version], drifted) == [
        "Version: Version has 'author', the model has no such field",
        "Version: field 'created_by' is not a property of Version",
    ]


def test_drift_extraOrLooselyTypedModelField_isReported(spec: dict[str, Any]) -> None:
    @dataclass(frozen=True)
    class Version(models.Version):
        author: str = ""

    assert drift(Version, MIRRORS[models.Version], spec) == ["Version: field 'author' is not a property of Version"]

    @dataclass(frozen=True)
    class LeaseInfo:
        holder: str
        fence: Optional[int]
        expires_at: str = ""

    assert drift(LeaseInfo, MIRRORS[models.LeaseInfo], spec) == [
        "LeaseInfo.fence: LeaseInfo requires it non-null, the model lets it be None"]


def test_drift_requiredBecomesOptional_isReported(spec: dict[str, Any]) -> None:
    drifted = copy.deepcopy(spec)
    drifted["components"]["schemas"]["Version"]["required"].remove("message")
    assert drift(models.Version, MIRRORS[models.Version], drifted) == [
        "Version.message: Version lets it be null or absent, the model never holds None (make it Optional)"]


def test_drift_staleException_isReported(spec: dict[str, Any]) -> None:
    stale = Mirror(("Version",), not_carried={"created_by": "x"}, nullability={"message": "y"})
    assert drift(models.Version, stale, spec) == [
        "Version: not-carried 'created_by' is a field: drop the exception",
        "Version.message: None-ness agrees with Version now: drop the exception",
    ]

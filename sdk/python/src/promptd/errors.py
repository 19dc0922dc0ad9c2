"""Typed exceptions, one class per problem code of the HTTP contract's (api/openapi.yaml) error table.

Every error promptd answers is ``application/problem+json`` with a stable
``code``; :func:`from_problem` turns it into the class registered for that
code (an unknown code falls back to the class of its HTTP status family).
Classes whose code carries extra fields expose them as typed properties;
every error keeps all of them in ``fields``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Optional

if TYPE_CHECKING:
    from .batches import BatchItemResult, BatchSummary, MergeConflictPath
    from .intents import Intent

__all__ = [
    "PromptdError",
    "TransportError",
    "from_problem",
    "CODES",
]


class PromptdError(Exception):
    """An answer of promptd that is not a success (or an SDK-side refusal)."""

    code: str = ""

    def __init__(
        self,
        status: int,
        code: str,
        detail: str = "",
        fields: Optional[Mapping[str, Any]] = None,
        retry_after: Optional[float] = None,
    ) -> None:
        self.status = status
        self.code = code
        self.detail = detail
        self.fields: dict[str, Any] = dict(fields or {})
        self.retry_after = retry_after
        super().__init__(f"{status} {code}: {detail}" if detail else f"{status} {code}")


class TransportError(PromptdError):
    """promptd could not be reached (connection refused, timeout, reset)."""

    def __init__(self, detail: str) -> None:
        super().__init__(0, "transport", detail)


# Status families: catch a whole family with one except clause.
class BadRequest(PromptdError):
    """400: the request is malformed (``field`` names the culprit)."""

    @property
    def field(self) -> Optional[str]:
        v = self.fields.get("field")
        return v if isinstance(v, str) else None


class Unauthorized(PromptdError):
    """401: no or unknown token."""


class Forbidden(PromptdError):
    """403: the token's role or scope does not allow this."""


class NotFound(PromptdError):
    """404: the named resource does not exist (one subclass per kind)."""


class Conflict(PromptdError):
    """409: the request conflicts with the resource's current state."""


class Gone(PromptdError):
    """410: a cursor older than what promptd keeps."""


class PreconditionFailed(PromptdError):
    """412: If-Match did not match (``current_revision``)."""

    @property
    def current_revision(self) -> Optional[int]:
        return _int(self.fields.get("current_revision"))


class PayloadTooLarge(PromptdError):
    """413: the body is over the limit (``limit``)."""


class Unprocessable(PromptdError):
    """422: the request is well formed but invalid."""

    @property
    def field(self) -> Optional[str]:
        v = self.fields.get("field")
        return v if isinstance(v, str) else None

    @property
    def variable(self) -> Optional[str]:
        v = self.fields.get("variable")
        return v if isinstance(v, str) else None


class Locked(PromptdError):
    """423: a lease or a claim is held by someone else."""


class PreconditionRequired(PromptdError):
    """428: a write needs expected_revision or If-Match."""


class TooManyRequests(PromptdError):
    """429: over a quota; ``retry_after`` seconds from the header."""


class ServerError(PromptdError):
    """5xx."""


def _int(v: Any) -> Optional[int]:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _str(v: Any) -> Optional[str]:
    return v if isinstance(v, str) else None


# Codes with typed fields.
class RevisionConflict(Conflict):
    code = "revision_conflict"

    @property
    def current_revision(self) -> Optional[int]:
        return _int(self.fields.get("current_revision"))


class VersionConflict(Conflict):
    code = "version_conflict"

    @property
    def latest_version(self) -> Optional[int]:
        return _int(self.fields.get("latest_version"))


class StaleFence(Conflict):
    """409 stale_fence: another fence holds the session, record or intent.
    A write, renew or release under an intent that ended (or with another
    fence) names it: ``intent_id``, its ``state`` and ``ended_at``."""

    code = "stale_fence"

    @property
    def current_fence(self) -> Optional[int]:
        return _int(self.fields.get("current_fence"))

    @property
    def intent_id(self) -> Optional[str]:
        return _str(self.fields.get("intent_id"))

    @property
    def state(self) -> Optional[str]:
        return _str(self.fields.get("state"))

    @property
    def ended_at(self) -> Optional[str]:
        return _str(self.fields.get("ended_at"))


class IntentConflict(Conflict):
    """409 intent_conflict: the registration overlaps live intents its mode
    (or theirs) excludes; ``conflicts`` are those, with holder, scope and
    expiry."""

    code = "intent_conflict"

    @property
    def conflicts(self) -> list["Intent"]:
        from .intents import Intent

        v = self.fields.get("conflicts")
        return [Intent.from_json(d) for d in v if isinstance(d, Mapping)] if isinstance(v, list) else []


class BatchRejected(Conflict):
    """409 batch_rejected: an all_or_nothing batch with an item that cannot
    be written; nothing was written. ``results`` has every item's result
    (the failing ones with their ``conflict``)."""

    code = "batch_rejected"

    @property
    def results(self) -> list["BatchItemResult"]:
        from .batches import item_results

        return item_results(self.fields.get("results"))

    @property
    def summary(self) -> "BatchSummary":
        from .batches import BatchSummary

        return BatchSummary.from_json(self.fields.get("summary"))

    @property
    def batch_fingerprint(self) -> Optional[str]:
        return _str(self.fields.get("batch_fingerprint"))


class MergeConflict(Conflict):
    """409 merge_conflict: both sides changed the same paths since the base;
    ``conflicts`` has per path the base, ours and theirs values. A record's
    carries its ``current_revision`` and ``content_hash``; a version
    create's the agent's ``latest_version`` and the ``base_version``."""

    code = "merge_conflict"

    @property
    def conflicts(self) -> list["MergeConflictPath"]:
        from .batches import merge_paths

        return merge_paths(self.fields.get("conflicts"))

    @property
    def current_revision(self) -> Optional[int]:
        return _int(self.fields.get("current_revision"))

    @property
    def content_hash(self) -> Optional[str]:
        return _str(self.fields.get("content_hash"))

    @property
    def latest_version(self) -> Optional[int]:
        return _int(self.fields.get("latest_version"))

    @property
    def base_version(self) -> Optional[int]:
        return _int(self.fields.get("base_version"))


class LeaseLost(Conflict):
    """409 lease_lost, also raised by the SDK itself when a lease it kept
    alive was lost (then ``status`` is 0 when promptd did not say so)."""

    code = "lease_lost"


class LeaseHeld(Locked):
    code = "lease_held"

    @property
    def holder(self) -> Optional[str]:
        v = self.fields.get("holder")
        return v if isinstance(v, str) else None

    @property
    def expires_at(self) -> Optional[str]:
        v = self.fields.get("expires_at")
        return v if isinstance(v, str) else None

    @property
    def conflicts(self) -> list[dict[str, Any]]:
        v = self.fields.get("conflicts")
        return list(v) if isinstance(v, list) else []


class OutsideIntent(Unprocessable):
    """422 outside_intent: a write under an intent touched what its scope
    does not cover (``intent_id``; ``field`` names the member)."""

    code = "outside_intent"

    @property
    def intent_id(self) -> Optional[str]:
        return _str(self.fields.get("intent_id"))


class Claimed(Locked):
    code = "claimed"

    @property
    def owner(self) -> Optional[str]:
        v = self.fields.get("owner")
        return v if isinstance(v, str) else None


class ClaimExpired(Conflict):
    code = "claim_expired"


class ReleaseActive(Conflict):
    code = "release_active"

    @property
    def release_id(self) -> Optional[str]:
        v = self.fields.get("release_id")
        return v if isinstance(v, str) else None


class CursorExpired(Gone):
    code = "cursor_expired"

    @property
    def oldest(self) -> Any:
        return self.fields.get("oldest")


class QuotaExceeded(TooManyRequests):
    code = "quota_exceeded"


class StoreUnavailable(ServerError):
    code = "store_unavailable"

    @property
    def store(self) -> Optional[str]:
        v = self.fields.get("store")
        return v if isinstance(v, str) else None


class ImportRejected(Conflict):
    code = "import_rejected"


def _code(code: str, name: str, base: type[PromptdError]) -> type[PromptdError]:
    cls = type(name, (base,), {"code": code, "__doc__": f"{code} (see api/openapi.yaml, Errors)."})
    cls.__module__ = __name__
    return cls


# The rest of the HTTP contract's (api/openapi.yaml) table: code, class, family. One line each, so the
# table is the definition.
InvalidJSON = _code("invalid_json", "InvalidJSON", BadRequest)
InvalidField = _code("invalid_field", "InvalidField", BadRequest)
InvalidID = _code("invalid_id", "InvalidID", BadRequest)
AgentNotFound = _code("agent_not_found", "AgentNotFound", NotFound)
VersionNotFound = _code("version_not_found", "VersionNotFound", NotFound)
ReleaseNotFound = _code("release_not_found", "ReleaseNotFound", NotFound)
SessionNotFound = _code("session_not_found", "SessionNotFound", NotFound)
LeaseNotFound = _code("lease_not_found", "LeaseNotFound", NotFound)
BoardNotFound = _code("board_not_found", "BoardNotFound", NotFound)
RecordNotFound = _code("record_not_found", "RecordNotFound", NotFound)
WebhookNotFound = _code("webhook_not_found", "WebhookNotFound", NotFound)
DeliveryNotFound = _code("delivery_not_found", "DeliveryNotFound", NotFound)
TokenNotFound = _code("token_not_found", "TokenNotFound", NotFound)
ChangeRequestNotFound = _code("change_request_not_found", "ChangeRequestNotFound", NotFound)
IntentNotFound = _code("intent_not_found", "IntentNotFound", NotFound)
BatchNotFound = _code("batch_not_found", "BatchNotFound", NotFound)
NoPointer = _code("no_pointer", "NoPointer", Conflict)
VersionRevoked = _code("version_revoked", "VersionRevoked", Conflict)
VersionCurrent = _code("version_current", "VersionCurrent", Conflict)
InvalidTransition = _code("invalid_transition", "InvalidTransition", Conflict)
SessionExists = _code("session_exists", "SessionExists", Conflict)
SessionClosed = _code("session_closed", "SessionClosed", Conflict)
SessionMismatch = _code("session_mismatch", "SessionMismatch", Conflict)
IdempotencyInProgress = _code("idempotency_in_progress", "IdempotencyInProgress", Conflict)
ChangeRequestClosed = _code("change_request_closed", "ChangeRequestClosed", Conflict)
TokenExists = _code("token_exists", "TokenExists", Conflict)
TokenBootstrap = _code("token_bootstrap", "TokenBootstrap", Conflict)
BoardInUse = _code("board_in_use", "BoardInUse", Conflict)
BodyTooLarge = _code("body_too_large", "BodyTooLarge", PayloadTooLarge)
UndeclaredVariable = _code("undeclared_variable", "UndeclaredVariable", Unprocessable)
MissingVariable = _code("missing_variable", "MissingVariable", Unprocessable)
InvalidVariable = _code("invalid_variable", "InvalidVariable", Unprocessable)
InvalidConfig = _code("invalid_config", "InvalidConfig", Unprocessable)
InvalidPercent = _code("invalid_percent", "InvalidPercent", Unprocessable)
InvalidSteps = _code("invalid_steps", "InvalidSteps", Unprocessable)
IdempotencyKeyReused = _code("idempotency_key_reused", "IdempotencyKeyReused", Unprocessable)
InvalidURL = _code("invalid_url", "InvalidURL", Unprocessable)
BundleTooLarge = _code("bundle_too_large", "BundleTooLarge", Unprocessable)
InvalidOverrides = _code("invalid_overrides", "InvalidOverrides", Unprocessable)
InvalidGuard = _code("invalid_guard", "InvalidGuard", Unprocessable)
LimitExceeded = _code("limit_exceeded", "LimitExceeded", Unprocessable)
SelfApproval = _code("self_approval", "SelfApproval", Forbidden)
CsrfFailed = _code("csrf_failed", "CsrfFailed", Forbidden)
Internal = _code("internal", "Internal", ServerError)
Overloaded = _code("overloaded", "Overloaded", ServerError)
SecretKeyRequired = _code("secret_key_required", "SecretKeyRequired", ServerError)

_FAMILIES: dict[int, type[PromptdError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    412: PreconditionFailed,
    413: PayloadTooLarge,
    422: Unprocessable,
    423: Locked,
    428: PreconditionRequired,
    429: TooManyRequests,
}


def _registry() -> dict[str, type[PromptdError]]:
    out: dict[str, type[PromptdError]] = {
        "unauthorized": Unauthorized,
        "forbidden": Forbidden,
        "not_found": NotFound,
        "precondition_failed": PreconditionFailed,
        "precondition_required": PreconditionRequired,
    }
    todo: list[type[PromptdError]] = [PromptdError]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            todo.append(sub)
            if sub.code and sub.code not in out:
                out[sub.code] = sub
    return out


CODES: dict[str, type[PromptdError]] = _registry()
"""Every known code and its exception class."""


def _retry_after(value: Optional[str]) -> Optional[float]:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def from_problem(status: int, body: Any, retry_after: Optional[str] = None) -> PromptdError:
    """The typed exception for a problem answer (body already decoded)."""
    problem: Mapping[str, Any] = body if isinstance(body, Mapping) else {}
    code = problem.get("code")
    if not isinstance(code, str) or not code:
        code = f"http_{status}"
    detail = problem.get("detail")
    fields = {k: v for k, v in problem.items() if k not in ("type", "title", "status", "detail", "code")}
    cls = CODES.get(code) or _FAMILIES.get(status) or (ServerError if status >= 500 else PromptdError)
    return cls(status, code, detail if isinstance(detail, str) else "", fields, _retry_after(retry_after))

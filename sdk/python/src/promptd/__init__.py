"""promptd: the Python SDK of promptd (prompt configs and session
coordination for AI agent fleets).

* :class:`Client` / :class:`AsyncClient`: the HTTP API, typed errors
  (:mod:`promptd.errors`), Idempotency-Key retries, sessions with
  optimistic appends and a lease context manager whose loss stops the work.
* intents (:mod:`promptd.intents`: ``with client.intent(holder, scope) as
  it:`` registered, renewed, released) and board batches with their commit
  proof (:mod:`promptd.batches`), merges of stale writes by JSON path.
* :class:`LocalPrompts` / :class:`AsyncLocalPrompts`: resolve and assemble
  locally from a bundle kept current by the change feed, with a disk copy
  for cold starts and exposure counts flushed to promptd.
"""

from ._http import RetryPolicy
from .aio import AsyncClient
from ._calls import Fragment, FragmentEnv, FragmentUse, FragmentVersion
from .client import Client
from .errors import (
    BatchRejected,
    Conflict,
    IntentConflict,
    LeaseHeld,
    LeaseLost,
    MergeConflict,
    NotFound,
    OutsideIntent,
    PromptdError,
    QuotaExceeded,
    RevisionConflict,
    StaleFence,
    StoreUnavailable,
    TransportError,
)
from .evaluate import AskServer
from .lease import AsyncSessionLease, HeldLeases, SessionLease
from .local import AsyncLocalPrompts, LocalPrompts
from . import batches, boards, intents
from .batches import ABSENT, BoardBatch, create_item, update_item
from .intents import AsyncHeldIntent, HeldIntent, Intent, IntentRef, IntentScope, RecordScope, RegisteredIntent
from .models import (Agent, Appended, Assembled, LeaseGrant, Page, Release, Resolved, Session, SessionSummary,
                     StateEntry, Trace, Turn, Version)

__all__ = [
    "batches", "boards", "intents", "ABSENT", "Agent", "Appended", "AskServer", "Assembled", "AsyncClient",
    "AsyncHeldIntent", "AsyncLocalPrompts", "AsyncSessionLease", "BatchRejected", "BoardBatch", "Client",
    "Conflict", "Fragment", "FragmentEnv", "FragmentUse", "FragmentVersion", "HeldIntent", "HeldLeases", "Intent", "IntentConflict", "IntentRef", "IntentScope", "LeaseGrant",
    "LeaseHeld", "LeaseLost", "LocalPrompts", "MergeConflict", "NotFound", "OutsideIntent", "Page", "PromptdError",
    "QuotaExceeded", "RecordScope", "RegisteredIntent", "Release", "Resolved", "RetryPolicy", "RevisionConflict",
    "Session", "SessionSummary", "SessionLease", "StaleFence", "StateEntry", "StoreUnavailable", "Trace", "TransportError", "Turn", "Version",
    "create_item", "update_item",
]

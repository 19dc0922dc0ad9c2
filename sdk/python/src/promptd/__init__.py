"""promptd: the Python SDK of promptd (prompt configs and session
coordination for AI agent fleets).

* :class:`Client` / :class:`AsyncClient`: the HTTP API, typed errors
  (:mod:`promptd.errors`), Idempotency-Key retries, sessions with
  optimistic appends and a lease context manager whose loss stops the work.
* :class:`LocalPrompts` / :class:`AsyncLocalPrompts`: resolve and assemble
  locally from a bundle kept current by the change feed, with a disk copy
  for cold starts and exposure counts flushed to promptd.
"""

from ._http import RetryPolicy
from .aio import AsyncClient
from .client import Client
from .errors import (
    Conflict,
    LeaseHeld,
    LeaseLost,
    NotFound,
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
from . import boards
from .models import Appended, Assembled, LeaseGrant, Resolved, Session, StateEntry, Trace, Turn

__all__ = [
    "boards", "AsyncClient", "AsyncLocalPrompts", "AsyncSessionLease", "Appended", "AskServer", "Assembled", "Client",
    "Conflict", "HeldLeases", "LeaseGrant", "LeaseHeld", "LeaseLost", "LocalPrompts", "NotFound", "PromptdError",
    "QuotaExceeded", "Resolved", "RetryPolicy", "RevisionConflict", "Session", "SessionLease", "StaleFence",
    "StateEntry", "StoreUnavailable", "Trace", "TransportError", "Turn",
]

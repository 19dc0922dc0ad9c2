"""The synchronous client. :class:`promptd.aio.AsyncClient` is the same
surface with ``async`` methods; both send the calls built in ``_calls``."""

from __future__ import annotations

from typing import Any, Callable, Iterator, Mapping, Optional, Sequence, TypeVar, Union

import httpx

from . import _calls, batches, boards, intents, stream
from ._calls import Fragment, FragmentEnv, FragmentUse, FragmentVersion
from ._http import LEASE_RETRY, Call, RetryPolicy, Sender, headers_for, sync_transport
from .errors import PromptdError, RevisionConflict
from .lease import HeldLeases, SessionLease
from .models import (
    Agent,
    Appended,
    Assembled,
    EnvPointer,
    LeaseGrant,
    Leases,
    Page,
    Release,
    Resolved,
    Session,
    SessionSummary,
    StateEntry,
    Version,
)

T = TypeVar("T")


class Client:
    """A promptd client: ``Client("http://127.0.0.1:8080", token)``.

    ``transport`` (an ``httpx.BaseTransport``) and ``http`` (a ready
    ``httpx.Client``) are for tests and custom networking."""

    def __init__(self, base_url: str, token: str, *, timeout: float = 10.0, retry: Optional[RetryPolicy] = None,
                 transport: Optional[httpx.BaseTransport] = None, http: Optional[httpx.Client] = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.http = http or httpx.Client(base_url=self.base_url, headers=headers_for(token), timeout=timeout,
                                         transport=transport or sync_transport())
        self._sender = Sender(self.http, retry or RetryPolicy())
        self._lease_retry = LEASE_RETRY
        self._leases: dict[str, SessionLease] = {}

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def _send(self, call: Call[T], retry: Optional[RetryPolicy] = None) -> T:
        return self._sender.send(call, retry)

    # Versions, envs, releases.
    def create_version(self, agent: str, config: Mapping[str, Any], base_version: int, message: str = "", *,
                       merge: bool = False) -> Version:
        """Version base_version + 1; a newer latest is VersionConflict, or
        with ``merge=True`` the three-way merge over it (``Version.merge``
        names both parents) or MergeConflict with the paths."""
        return self._send(_calls.create_version(agent, config, base_version, message, merge))

    def get_version(self, agent: str, version: int) -> Version:
        return self._send(_calls.get_version(agent, version))

    def list_versions(self, agent: str, limit: Optional[int] = None, cursor: Optional[str] = None) -> Page[Version]:
        return self._send(_calls.list_versions(agent, limit, cursor))

    def list_agents(self) -> Page[Agent]:
        return self._send(_calls.list_agents())

    def get_env(self, agent: str, env: str) -> EnvPointer:
        return self._send(_calls.get_env(agent, env))

    def set_env(self, agent: str, env: str, version: int, expected_revision: int) -> EnvPointer:
        return self._send(_calls.set_env(agent, env, version, expected_revision))

    def revoke(self, agent: str, env: str, version: int, reason: str = "") -> Any:
        return self._send(_calls.revoke(agent, env, version, reason))

    # Fragments (docs/fragments.md): every route needs an unscoped token;
    # writes the admin role.
    def create_fragment_version(self, name: str, base_version: int, *, text: Optional[str] = None,
                                messages: Optional[Sequence[Mapping[str, Any]]] = None,
                                variables: Optional[Mapping[str, Any]] = None,
                                fragments: Optional[Mapping[str, Any]] = None, message: str = "",
                                propose: bool = False, dry_run: bool = False) -> FragmentVersion:
        """Fragment version base_version + 1 of exactly one of ``text`` or
        ``messages``; a newer latest is VersionConflict (``latest_version``),
        a reference promptd refuses Unprocessable (``invalid_config``). With
        ``dry_run`` or ``propose`` nothing is written (``propose`` also
        lists the agents whose next publish an env of it would reach)."""
        return self._send(_calls.create_fragment_version(name, base_version, text, messages, variables, fragments,
                                                           message, propose, dry_run))

    def list_fragments(self, limit: Optional[int] = None, cursor: Optional[str] = None) -> Page[Fragment]:
        return self._send(_calls.list_fragments(limit, cursor))

    def list_fragment_versions(self, name: str, limit: Optional[int] = None,
                               cursor: Optional[str] = None) -> Page[FragmentVersion]:
        """A fragment's versions, newest first."""
        return self._send(_calls.list_fragment_versions(name, limit, cursor))

    def get_fragment_version(self, name: str, version: int) -> FragmentVersion:
        return self._send(_calls.get_fragment_version(name, version))

    def fragment_used_by(self, name: str, version: int, limit: Optional[int] = None,
                         cursor: Optional[str] = None) -> Page[FragmentUse]:
        """The agent versions that pin this fragment version, with the envs
        that point at each."""
        return self._send(_calls.fragment_used_by(name, version, limit, cursor))

    def put_fragment_env(self, name: str, env: str, version: int, expected_revision: int) -> FragmentEnv:
        """Move (``expected_revision`` its current revision) or create
        (``expected_revision=0``) a fragment env pointer; a stale revision is
        RevisionConflict."""
        return self._send(_calls.put_fragment_env(name, env, version, expected_revision))

    def get_fragment_env(self, name: str, env: str) -> FragmentEnv:
        return self._send(_calls.get_fragment_env(name, env))

    def get_release(self, release_id: str) -> Release:
        return self._send(_calls.get_release(release_id))

    def list_releases(self, agent: str, env: str, limit: Optional[int] = None,
                      cursor: Optional[str] = None) -> Page[Release]:
        """The env's releases, newest first (``items`` are Release, without ``history``: get_release has it)."""
        return self._send(_calls.list_releases(agent, env, limit, cursor))

    def create_release(self, agent: str, env: str, candidate_version: int, percent: Union[int, float, str], *,
                       stickiness: Optional[str] = None, steps: Optional[Sequence[Mapping[str, Any]]] = None,
                       message: Optional[str] = None, expected_revision: Optional[int] = None,
                       overrides: Optional[Mapping[str, Any]] = None,
                       guard: Optional[Mapping[str, Any]] = None) -> Release:
        """Start a release of ``candidate_version`` at ``percent`` (0..100,
        at most 2 decimals) over the version the env pointer names (admin)."""
        return self._send(_calls.create_release(agent, env, candidate_version, percent, stickiness, steps, message,
                                                 expected_revision, overrides, guard))

    def ramp_release(self, release_id: str, percent: Union[int, float, str], expected_revision: int,
                     reason: Optional[str] = None) -> Release:
        """Set a running or paused release's percent (up or down; the
        remaining steps are cancelled) at its revision (admin)."""
        return self._send(_calls.ramp_release(release_id, percent, expected_revision, reason))

    def pause_release(self, release_id: str, expected_revision: Optional[int] = None,
                      reason: Optional[str] = None) -> Release:
        """running -> paused (admin; a release already paused is a no-op)."""
        return self._send(_calls.transition_release(release_id, "pause", expected_revision, reason))

    def resume_release(self, release_id: str, expected_revision: Optional[int] = None,
                       reason: Optional[str] = None) -> Release:
        """paused -> running (admin)."""
        return self._send(_calls.transition_release(release_id, "resume", expected_revision, reason))

    def promote_release(self, release_id: str, expected_revision: Optional[int] = None,
                        reason: Optional[str] = None) -> Release:
        """running|paused -> promoted: the env pointer moves to the candidate (admin)."""
        return self._send(_calls.transition_release(release_id, "promote", expected_revision, reason))

    def rollback_release(self, release_id: str, expected_revision: Optional[int] = None,
                         reason: Optional[str] = None) -> Release:
        """running|paused -> rolled_back: everyone gets the baseline again (admin)."""
        return self._send(_calls.transition_release(release_id, "rollback", expected_revision, reason))
    # Runtime path.
    def resolve(self, agent: str, env: str, user_id: Optional[str] = None,
                session_id: Optional[str] = None) -> Resolved:
        return self._send(_calls.resolve(agent, env, user_id, session_id))

    def assemble(self, agent: str, env: str, variables: Optional[Mapping[str, Any]] = None, *,
                 user_id: Optional[str] = None, session_id: Optional[str] = None, history: bool = False,
                 max_history_turns: Optional[int] = None, format: str = "plain") -> Assembled:
        return self._send(_calls.assemble(agent, env, variables, user_id, session_id, history,
                                          max_history_turns, format))

    # Sessions.
    def create_session(self, agent: str, env: str, *, session_id: Optional[str] = None,
                       user_id: Optional[str] = None, metadata: Any = None,
                       idle_ttl_ms: Optional[int] = None) -> Session:
        return self._send(_calls.create_session(agent, env, session_id, user_id, metadata, idle_ttl_ms))

    def list_sessions(self, *, agent: Optional[str] = None, env: Optional[str] = None,
                      state: Optional[str] = None, limit: Optional[int] = None,
                      cursor: Optional[str] = None) -> Page[SessionSummary]:
        """Sessions, newest first (``items`` are SessionSummary: no
        metadata, turns nor state keys, get_session has them; ``state``
        open or closed)."""
        return self._send(_calls.list_sessions(agent, env, state, limit, cursor))

    def get_session(self, sid: str, since: Optional[int] = None, limit: Optional[int] = None) -> Session:
        return self._send(_calls.get_session(sid, since, limit))

    def _fenced(self, sid: str, fence: Optional[int], call: Callable[[Optional[int]], Call[T]]) -> T:
        lease = self._leases.get(sid)
        if fence is None and lease is not None:
            fence = lease.fence_for_write()  # raises LeaseLost, sending nothing
        try:
            return self._send(call(fence))
        except PromptdError as err:
            if lease is not None:
                lease.observe(err)
            raise

    def append(self, sid: str, turns: Sequence[_calls.TurnLike], expected_revision: int,
               fence: Optional[int] = None) -> Appended:
        """Append turns if the session is still at ``expected_revision``
        (else :class:`RevisionConflict`). Inside ``session_lease(sid)`` the
        lease's fence is sent."""
        return self._fenced(sid, fence, lambda f: _calls.append(sid, turns, expected_revision, f))

    def append_retrying(self, sid: str, fn: Callable[[Session], Optional[Sequence[_calls.TurnLike]]],
                        attempts: int = 10) -> Optional[Appended]:
        """Read the session, let ``fn`` decide the turns from it (None: stop),
        append at the revision read; on revision_conflict read again."""
        last: Optional[RevisionConflict] = None
        for _ in range(max(attempts, 1)):
            s = self.get_session(sid)
            turns = fn(s)
            if turns is None:
                return None
            try:
                return self.append(sid, turns, s.revision)
            except RevisionConflict as err:
                last = err
        assert last is not None
        raise last

    def put_state(self, sid: str, key: str, value: Any, expected_revision: int,
                  fence: Optional[int] = None) -> StateEntry:
        return self._fenced(sid, fence, lambda f: _calls.put_state(sid, key, value, expected_revision, f))

    def get_state(self, sid: str) -> dict[str, StateEntry]:
        return self._send(_calls.get_state(sid))

    def close_session(self, sid: str, expected_revision: int, fence: Optional[int] = None) -> Session:
        return self._fenced(sid, fence, lambda f: _calls.close_session(sid, expected_revision, f))

    # Session leases.
    def session_lease(self, sid: str, holder: str, ttl_ms: int = 5000, wait_ms: int = 0,
                      mode: str = "reject") -> SessionLease:
        """``with client.session_lease(sid, holder) as lease:`` (see promptd.lease)."""
        return SessionLease(self, sid, holder, ttl_ms, wait_ms, mode)

    def acquire_session_lease(self, sid: str, holder: str, ttl_ms: int = 5000, wait_ms: int = 0,
                              mode: str = "reject", token: Optional[str] = None) -> LeaseGrant:
        return self._send(_calls.acquire_session_lease(sid, holder, ttl_ms, wait_ms, mode, token))

    def renew_session_lease(self, sid: str, token: str, ttl_ms: int = 5000) -> str:
        return self._send(_calls.renew_session_lease(sid, token, ttl_ms))

    def release_session_lease(self, sid: str, token: str) -> None:
        self._send(_calls.release_session_lease(sid, token))

    # Generic leases.
    def acquire_leases(self, resources: Sequence[str], holder: str, ttl_ms: int = 5000,
                        wait_ms: int = 0) -> Leases:
        """All of ``resources`` or none (423 lease_held with ``conflicts``)."""
        return self._send(_calls.acquire_leases(resources, holder, ttl_ms, wait_ms))

    def renew_leases(self, lease_id: str, token: str, ttl_ms: int = 5000) -> str:
        return self._send(_calls.renew_leases(lease_id, token, ttl_ms))

    def release_leases(self, lease_id: str, token: str) -> None:
        self._send(_calls.release_leases(lease_id, token))

    def lease(self, resources: Sequence[str], holder: str, ttl_ms: int = 5000, wait_ms: int = 0) -> HeldLeases:
        """``with client.lease(["order:1"], holder) as held:`` renewed in the background."""
        return HeldLeases(self, resources, holder, ttl_ms, wait_ms)

    # Boards.
    def get_board(self, board: str) -> boards.Board:
        """The board and its state machine (the default board: pending ->
        claimed -> running -> done | failed)."""
        return self._send(boards.get_board(board))

    def put_board(self, board: str, definition: Mapping[str, Any], expected_revision: int = 0) -> boards.Board:
        """Define (``expected_revision`` 0) or replace a board's machine:
        ``states``, ``initial``, ``transitions``, ``claim``, ``terminal``,
        ``quota`` (admin)."""
        return self._send(boards.put_board(board, definition, expected_revision))

    def list_records(self, board: str, *, state: Optional[str] = None, owner: Optional[str] = None,
                     limit: Optional[int] = None, cursor: Optional[str] = None) -> Page[boards.Record]:
        """A board's records in board order (``items`` are Record;
        ``next`` is the cursor of the next page)."""
        return self._send(boards.list_records(board, state, owner, limit, cursor))

    def create_record(self, board: str, payload: Any, *, id: Optional[str] = None, priority: Optional[int] = None,
                      dedupe_key: Optional[str] = None) -> boards.Record:
        return self._send(boards.create_record(board, payload, id, priority, dedupe_key))

    def get_record(self, board: str, id: str) -> boards.Record:
        return self._send(boards.get_record(board, id))

    def claim(self, board: str, holder: str, ttl_ms: int = 30000, wait_ms: int = 0,
              min_priority: Optional[int] = None) -> boards.BoardClaim:
        """``with client.claim(board, holder) as work:`` (see promptd.boards)."""
        return boards.BoardClaim(self, board, holder, ttl_ms, wait_ms, min_priority)

    def claim_next(self, board: str, holder: str, ttl_ms: Optional[int] = None, wait_ms: int = 0,
                   min_priority: Optional[int] = None) -> Optional[tuple[boards.Record, int]]:
        return self._send(boards.claim_next(board, holder, ttl_ms, wait_ms, min_priority))

    def heartbeat(self, board: str, id: str, fence: int, ttl_ms: Optional[int] = None) -> dict[str, Any]:
        return self._send(boards.heartbeat(board, id, fence, ttl_ms))

    def update_record(self, board: str, id: str, expected_revision: int, *, state: Optional[str] = None,
                      payload: Any = None, fence: Optional[int] = None, merge: bool = False,
                      base_payload: Any = batches.ABSENT, intent: Optional[intents.RefLike] = None) -> boards.Record:
        """Compare-and-set a record. ``merge=True``: the payload is merged
        over the changes made since ``expected_revision`` (MergeConflict on
        an overlap); ``intent``: checked against its scope (OutsideIntent)
        and fence (StaleFence)."""
        return self._send(boards.patch_record(board, id, expected_revision, state, payload, fence,
                                              payload is not None, merge=merge, base_payload=base_payload,
                                              intent=intent))

    def apply_batch(self, board: str, items: Sequence[Mapping[str, Any]], *, mode: str = "all_or_nothing",
                    intent: Optional[intents.RefLike] = None,
                    batch_fingerprint: Optional[str] = None) -> batches.BoardBatch:
        """Creates and updates in one transaction, answered with the commit
        proof (see promptd.batches); all_or_nothing with a failing item
        raises BatchRejected and writes nothing."""
        return self._send(batches.apply_batch(board, items, mode, intent, batch_fingerprint))

    def get_batch(self, board: str, batch_id: str) -> batches.BoardBatch:
        return self._send(batches.get_batch(board, batch_id))

    # Intents.
    def register_intent(self, holder: str, scope: intents.ScopeLike, *, mode: Optional[str] = None,
                        ttl_ms: Optional[int] = None, description: Optional[str] = None) -> intents.RegisteredIntent:
        """Register an intent (``mode`` exclusive, the default, or advisory);
        an excluded overlap raises IntentConflict naming the others."""
        return self._send(intents.register(holder, scope, mode, ttl_ms, description))

    def list_intents(self, *, agent: intents.Names = None, env: intents.Names = None, board: intents.Names = None,
                     record: intents.Names = None, holder: Optional[str] = None, limit: Optional[int] = None,
                     cursor: Optional[str] = None) -> intents.IntentPage:
        """The live intents overlapping a scope (each argument one name or
        several; ``record`` is ``board/id`` or ``board/prefix*``)."""
        return self._send(intents.list_intents(agent, env, board, record, holder, limit, cursor))

    def get_intent(self, intent_id: str) -> intents.Intent:
        return self._send(intents.get(intent_id))

    def renew_intent(self, intent_id: str, fence: int, ttl_ms: Optional[int] = None) -> intents.Intent:
        return self._send(intents.renew(intent_id, fence, ttl_ms), retry=self._lease_retry)

    def release_intent(self, intent_id: str, fence: int) -> intents.Intent:
        return self._send(intents.release(intent_id, fence))

    def intent(self, holder: str, scope: intents.ScopeLike, *, mode: Optional[str] = None, ttl_ms: int = 30000,
               description: Optional[str] = None) -> intents.HeldIntent:
        """``with client.intent(holder, scope) as it:`` registered, renewed
        every ttl/3, released at the end (see promptd.intents)."""
        return intents.HeldIntent(self, holder, scope, mode, ttl_ms, description)

    # Events (stream and JSON long-poll) and exposures.
    def events(self, since: Optional[str] = None, *, actions: Optional[str] = None, agent: Optional[str] = None,
               env: Optional[str] = None, board: Optional[str] = None) -> Iterator[dict[str, Any]]:
        """``for ev in client.events(since="0"):`` the change feed, reconnecting
        with Last-Event-ID (see promptd.stream)."""
        return stream.events(self, since, actions, agent, env, board)

    def poll_events(self, since: Optional[str] = None, wait_ms: Optional[int] = None, limit: Optional[int] = None,
                    actions: Optional[str] = None, agent: Optional[str] = None, env: Optional[str] = None) -> Page[dict[str, Any]]:
        return self._send(_calls.poll_events(since, wait_ms, limit, actions, agent, env))

    def get_exposures(self, agent: str, env: str, frm: Optional[str] = None, to: Optional[str] = None) -> list[
            dict[str, Any]]:
        items: list[dict[str, Any]] = []
        cursor: Optional[str] = None
        while True:
            page = self._send(_calls.get_exposures(agent, env, frm, to, cursor))
            items.extend(page.items)
            if not page.next:
                return items
            cursor = page.next

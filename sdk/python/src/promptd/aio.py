"""The asyncio client: the surface of :class:`promptd.Client` with ``async``
methods, sending the same calls (``_calls``)."""

from __future__ import annotations

from typing import Any, AsyncIterator, Callable, Mapping, Optional, Sequence, TypeVar, Union

import httpx

from . import _calls, batches, boards, intents, stream
from ._calls import Fragment, FragmentEnv, FragmentUse, FragmentVersion
from ._http import LEASE_RETRY, AsyncSender, Call, RetryPolicy, headers_for
from .errors import PromptdError, RevisionConflict
from .lease import AsyncHeldLeases, AsyncSessionLease
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


class AsyncClient:
    """``AsyncClient("http://127.0.0.1:8080", token)``; ``async with`` closes it.

    ``transport`` (an ``httpx.AsyncBaseTransport``) and ``http`` (a ready
    ``httpx.AsyncClient``) are for tests and custom networking."""

    def __init__(self, base_url: str, token: str, *, timeout: float = 10.0, retry: Optional[RetryPolicy] = None,
                 transport: Optional[httpx.AsyncBaseTransport] = None, http: Optional[httpx.AsyncClient] = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.http = http or httpx.AsyncClient(base_url=self.base_url, headers=headers_for(token), timeout=timeout,
                                         transport=transport)
        self._sender = AsyncSender(self.http, retry or RetryPolicy())
        self._lease_retry = LEASE_RETRY
        self._leases: dict[str, AsyncSessionLease] = {}

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def close(self) -> None:
        await self.http.aclose()

    async def _send(self, call: Call[T], retry: Optional[RetryPolicy] = None) -> T:
        return await self._sender.send(call, retry)

    # Versions, envs, releases.
    async def create_version(self, agent: str, config: Mapping[str, Any], base_version: int, message: str = "",
                             *, merge: bool = False) -> Version:
        """Version base_version + 1; a newer latest is VersionConflict, or
        with ``merge=True`` the three-way merge over it (``Version.merge``
        names both parents) or MergeConflict with the paths."""
        return await self._send(_calls.create_version(agent, config, base_version, message, merge))

    async def get_version(self, agent: str, version: int) -> Version:
        return await self._send(_calls.get_version(agent, version))

    async def list_versions(self, agent: str, limit: Optional[int] = None,
                            cursor: Optional[str] = None) -> Page[Version]:
        return await self._send(_calls.list_versions(agent, limit, cursor))

    async def list_agents(self) -> Page[Agent]:
        return await self._send(_calls.list_agents())

    async def get_env(self, agent: str, env: str) -> EnvPointer:
        return await self._send(_calls.get_env(agent, env))

    async def set_env(self, agent: str, env: str, version: int, expected_revision: int) -> EnvPointer:
        return await self._send(_calls.set_env(agent, env, version, expected_revision))

    async def revoke(self, agent: str, env: str, version: int, reason: str = "") -> Any:
        return await self._send(_calls.revoke(agent, env, version, reason))

    # Fragments (docs/fragments.md): every route needs an unscoped token;
    # writes the admin role.
    async def create_fragment_version(self, name: str, base_version: int, *, text: Optional[str] = None,
                                      messages: Optional[Sequence[Mapping[str, Any]]] = None,
                                      variables: Optional[Mapping[str, Any]] = None,
                                      fragments: Optional[Mapping[str, Any]] = None, message: str = "",
                                      propose: bool = False, dry_run: bool = False) -> FragmentVersion:
        """Fragment version base_version + 1 of exactly one of ``text`` or
        ``messages``; a newer latest is VersionConflict (``latest_version``),
        a reference promptd refuses Unprocessable (``invalid_config``). With
        ``dry_run`` or ``propose`` nothing is written (``propose`` also
        lists the agents whose next publish an env of it would reach)."""
        return await self._send(_calls.create_fragment_version(name, base_version, text, messages, variables, fragments,
                                                                 message, propose, dry_run))

    async def list_fragments(self, limit: Optional[int] = None, cursor: Optional[str] = None) -> Page[Fragment]:
        return await self._send(_calls.list_fragments(limit, cursor))

    async def list_fragment_versions(self, name: str, limit: Optional[int] = None,
                                     cursor: Optional[str] = None) -> Page[FragmentVersion]:
        """A fragment's versions, newest first."""
        return await self._send(_calls.list_fragment_versions(name, limit, cursor))

    async def get_fragment_version(self, name: str, version: int) -> FragmentVersion:
        return await self._send(_calls.get_fragment_version(name, version))

    async def fragment_used_by(self, name: str, version: int, limit: Optional[int] = None,
                               cursor: Optional[str] = None) -> Page[FragmentUse]:
        """The agent versions that pin this fragment version, with the envs
        that point at each."""
        return await self._send(_calls.fragment_used_by(name, version, limit, cursor))

    async def put_fragment_env(self, name: str, env: str, version: int, expected_revision: int) -> FragmentEnv:
        """Move (``expected_revision`` its current revision) or create
        (``expected_revision=0``) a fragment env pointer; a stale revision is
        RevisionConflict."""
        return await self._send(_calls.put_fragment_env(name, env, version, expected_revision))

    async def get_fragment_env(self, name: str, env: str) -> FragmentEnv:
        return await self._send(_calls.get_fragment_env(name, env))

    async def get_release(self, release_id: str) -> Release:
        return await self._send(_calls.get_release(release_id))

    async def list_releases(self, agent: str, env: str, limit: Optional[int] = None,
                      cursor: Optional[str] = None) -> Page[Release]:
        """The env's releases, newest first (``items`` are Release, without ``history``: get_release has it)."""
        return await self._send(_calls.list_releases(agent, env, limit, cursor))

    async def create_release(self, agent: str, env: str, candidate_version: int, percent: Union[int, float, str], *,
                       stickiness: Optional[str] = None, steps: Optional[Sequence[Mapping[str, Any]]] = None,
                       message: Optional[str] = None, expected_revision: Optional[int] = None,
                       overrides: Optional[Mapping[str, Any]] = None,
                       guard: Optional[Mapping[str, Any]] = None) -> Release:
        """Start a release of ``candidate_version`` at ``percent`` (0..100,
        at most 2 decimals) over the version the env pointer names (admin)."""
        return await self._send(_calls.create_release(agent, env, candidate_version, percent, stickiness, steps, message,
                                                 expected_revision, overrides, guard))

    async def ramp_release(self, release_id: str, percent: Union[int, float, str], expected_revision: int,
                     reason: Optional[str] = None) -> Release:
        """Set a running or paused release's percent (up or down; the
        remaining steps are cancelled) at its revision (admin)."""
        return await self._send(_calls.ramp_release(release_id, percent, expected_revision, reason))

    async def pause_release(self, release_id: str, expected_revision: Optional[int] = None,
                      reason: Optional[str] = None) -> Release:
        """running -> paused (admin; a release already paused is a no-op)."""
        return await self._send(_calls.transition_release(release_id, "pause", expected_revision, reason))

    async def resume_release(self, release_id: str, expected_revision: Optional[int] = None,
                       reason: Optional[str] = None) -> Release:
        """paused -> running (admin)."""
        return await self._send(_calls.transition_release(release_id, "resume", expected_revision, reason))

    async def promote_release(self, release_id: str, expected_revision: Optional[int] = None,
                        reason: Optional[str] = None) -> Release:
        """running|paused -> promoted: the env pointer moves to the candidate (admin)."""
        return await self._send(_calls.transition_release(release_id, "promote", expected_revision, reason))

    async def rollback_release(self, release_id: str, expected_revision: Optional[int] = None,
                         reason: Optional[str] = None) -> Release:
        """running|paused -> rolled_back: everyone gets the baseline again (admin)."""
        return await self._send(_calls.transition_release(release_id, "rollback", expected_revision, reason))
    # Runtime path.
    async def resolve(self, agent: str, env: str, user_id: Optional[str] = None,
                session_id: Optional[str] = None) -> Resolved:
        return await self._send(_calls.resolve(agent, env, user_id, session_id))

    async def assemble(self, agent: str, env: str, variables: Optional[Mapping[str, Any]] = None, *,
                 user_id: Optional[str] = None, session_id: Optional[str] = None, history: bool = False,
                 max_history_turns: Optional[int] = None, format: str = "plain") -> Assembled:
        return await self._send(_calls.assemble(agent, env, variables, user_id, session_id, history,
                                          max_history_turns, format))

    # Sessions.
    async def create_session(self, agent: str, env: str, *, session_id: Optional[str] = None,
                       user_id: Optional[str] = None, metadata: Any = None,
                       idle_ttl_ms: Optional[int] = None) -> Session:
        return await self._send(_calls.create_session(agent, env, session_id, user_id, metadata, idle_ttl_ms))

    async def list_sessions(self, *, agent: Optional[str] = None, env: Optional[str] = None,
                      state: Optional[str] = None, limit: Optional[int] = None,
                      cursor: Optional[str] = None) -> Page[SessionSummary]:
        """Sessions, newest first (``items`` are SessionSummary: no
        metadata, turns nor state keys, get_session has them; ``state``
        open or closed)."""
        return await self._send(_calls.list_sessions(agent, env, state, limit, cursor))

    async def get_session(self, sid: str, since: Optional[int] = None, limit: Optional[int] = None) -> Session:
        return await self._send(_calls.get_session(sid, since, limit))

    async def _fenced(self, sid: str, fence: Optional[int], call: Callable[[Optional[int]], Call[T]]) -> T:
        lease = self._leases.get(sid)
        if fence is None and lease is not None:
            fence = lease.fence_for_write()  # raises LeaseLost, sending nothing
        try:
            return await self._send(call(fence))
        except PromptdError as err:
            if lease is not None:
                lease.observe(err)
            raise

    async def append(self, sid: str, turns: Sequence[_calls.TurnLike], expected_revision: int,
               fence: Optional[int] = None) -> Appended:
        """Append turns if the session is still at ``expected_revision``
        (else :class:`RevisionConflict`). Inside ``session_lease(sid)`` the
        lease's fence is sent."""
        return await self._fenced(sid, fence, lambda f: _calls.append(sid, turns, expected_revision, f))

    async def append_retrying(self, sid: str, fn: Callable[[Session], Optional[Sequence[_calls.TurnLike]]],
                        attempts: int = 10) -> Optional[Appended]:
        """Read the session, let ``fn`` decide the turns from it (None: stop),
        append at the revision read; on revision_conflict read again."""
        last: Optional[RevisionConflict] = None
        for _ in range(max(attempts, 1)):
            s = await self.get_session(sid)
            turns = fn(s)
            if turns is None:
                return None
            try:
                return await self.append(sid, turns, s.revision)
            except RevisionConflict as err:
                last = err
        assert last is not None
        raise last

    async def put_state(self, sid: str, key: str, value: Any, expected_revision: int,
                  fence: Optional[int] = None) -> StateEntry:
        return await self._fenced(sid, fence, lambda f: _calls.put_state(sid, key, value, expected_revision, f))

    async def get_state(self, sid: str) -> dict[str, StateEntry]:
        return await self._send(_calls.get_state(sid))

    async def close_session(self, sid: str, expected_revision: int, fence: Optional[int] = None) -> Session:
        return await self._fenced(sid, fence, lambda f: _calls.close_session(sid, expected_revision, f))

    # Session leases.
    def session_lease(self, sid: str, holder: str, ttl_ms: int = 5000, wait_ms: int = 0,
                      mode: str = "reject") -> AsyncSessionLease:
        """``async with client.session_lease(sid, holder) as lease:``: the
        body is cancelled and LeaseLost raised when the lease is lost."""
        return AsyncSessionLease(self, sid, holder, ttl_ms, wait_ms, mode)

    async def acquire_session_lease(self, sid: str, holder: str, ttl_ms: int = 5000, wait_ms: int = 0,
                              mode: str = "reject", token: Optional[str] = None) -> LeaseGrant:
        return await self._send(_calls.acquire_session_lease(sid, holder, ttl_ms, wait_ms, mode, token))

    async def renew_session_lease(self, sid: str, token: str, ttl_ms: int = 5000) -> str:
        return await self._send(_calls.renew_session_lease(sid, token, ttl_ms))

    async def release_session_lease(self, sid: str, token: str) -> None:
        await self._send(_calls.release_session_lease(sid, token))

    # Generic leases.
    async def acquire_leases(self, resources: Sequence[str], holder: str, ttl_ms: int = 5000,
                        wait_ms: int = 0) -> Leases:
        """All of ``resources`` or none (423 lease_held with ``conflicts``)."""
        return await self._send(_calls.acquire_leases(resources, holder, ttl_ms, wait_ms))

    async def renew_leases(self, lease_id: str, token: str, ttl_ms: int = 5000) -> str:
        return await self._send(_calls.renew_leases(lease_id, token, ttl_ms))

    async def release_leases(self, lease_id: str, token: str) -> None:
        await self._send(_calls.release_leases(lease_id, token))

    def lease(self, resources: Sequence[str], holder: str, ttl_ms: int = 5000, wait_ms: int = 0) -> AsyncHeldLeases:
        """``async with client.lease(["order:1"], holder) as held:`` renewed
        on a task; on loss the body is cancelled and LeaseLost raised."""
        return AsyncHeldLeases(self, resources, holder, ttl_ms, wait_ms)

    # Boards.
    async def get_board(self, board: str) -> boards.Board:
        """The board and its state machine (the default board: pending ->
        claimed -> running -> done | failed)."""
        return await self._send(boards.get_board(board))

    async def put_board(self, board: str, definition: Mapping[str, Any], expected_revision: int = 0) -> boards.Board:
        """Define (``expected_revision`` 0) or replace a board's machine:
        ``states``, ``initial``, ``transitions``, ``claim``, ``terminal``,
        ``quota`` (admin)."""
        return await self._send(boards.put_board(board, definition, expected_revision))

    async def list_records(self, board: str, *, state: Optional[str] = None, owner: Optional[str] = None,
                     limit: Optional[int] = None, cursor: Optional[str] = None) -> Page[boards.Record]:
        """A board's records in board order (``items`` are Record;
        ``next`` is the cursor of the next page)."""
        return await self._send(boards.list_records(board, state, owner, limit, cursor))

    async def create_record(self, board: str, payload: Any, *, id: Optional[str] = None,
                            priority: Optional[int] = None, dedupe_key: Optional[str] = None) -> boards.Record:
        return await self._send(boards.create_record(board, payload, id, priority, dedupe_key))

    async def get_record(self, board: str, id: str) -> boards.Record:
        return await self._send(boards.get_record(board, id))

    def claim(self, board: str, holder: str, ttl_ms: int = 30000, wait_ms: int = 0,
              min_priority: Optional[int] = None) -> boards.AsyncBoardClaim:
        """``async with client.claim(board, holder) as work:``: heartbeats on
        a task; on loss the body is cancelled and LeaseLost raised (see
        promptd.boards)."""
        return boards.AsyncBoardClaim(self, board, holder, ttl_ms, wait_ms, min_priority)

    async def claim_next(self, board: str, holder: str, ttl_ms: Optional[int] = None, wait_ms: int = 0,
                         min_priority: Optional[int] = None) -> Optional[tuple[boards.Record, int]]:
        return await self._send(boards.claim_next(board, holder, ttl_ms, wait_ms, min_priority))

    async def heartbeat(self, board: str, id: str, fence: int, ttl_ms: Optional[int] = None) -> dict[str, Any]:
        return await self._send(boards.heartbeat(board, id, fence, ttl_ms))

    async def update_record(self, board: str, id: str, expected_revision: int, *, state: Optional[str] = None,
                            payload: Any = None, fence: Optional[int] = None, merge: bool = False,
                            base_payload: Any = batches.ABSENT,
                            intent: Optional[intents.RefLike] = None) -> boards.Record:
        """See Client.update_record."""
        return await self._send(boards.patch_record(board, id, expected_revision, state, payload, fence,
                                                    payload is not None, merge=merge, base_payload=base_payload,
                                                    intent=intent))

    async def apply_batch(self, board: str, items: Sequence[Mapping[str, Any]], *, mode: str = "all_or_nothing",
                          intent: Optional[intents.RefLike] = None,
                          batch_fingerprint: Optional[str] = None) -> batches.BoardBatch:
        """See Client.apply_batch."""
        return await self._send(batches.apply_batch(board, items, mode, intent, batch_fingerprint))

    async def get_batch(self, board: str, batch_id: str) -> batches.BoardBatch:
        return await self._send(batches.get_batch(board, batch_id))

    # Intents.
    async def register_intent(self, holder: str, scope: intents.ScopeLike, *, mode: Optional[str] = None,
                              ttl_ms: Optional[int] = None,
                              description: Optional[str] = None) -> intents.RegisteredIntent:
        return await self._send(intents.register(holder, scope, mode, ttl_ms, description))

    async def list_intents(self, *, agent: intents.Names = None, env: intents.Names = None,
                           board: intents.Names = None, record: intents.Names = None, holder: Optional[str] = None,
                           limit: Optional[int] = None, cursor: Optional[str] = None) -> intents.IntentPage:
        return await self._send(intents.list_intents(agent, env, board, record, holder, limit, cursor))

    async def get_intent(self, intent_id: str) -> intents.Intent:
        return await self._send(intents.get(intent_id))

    async def renew_intent(self, intent_id: str, fence: int, ttl_ms: Optional[int] = None) -> intents.Intent:
        return await self._send(intents.renew(intent_id, fence, ttl_ms), retry=self._lease_retry)

    async def release_intent(self, intent_id: str, fence: int) -> intents.Intent:
        return await self._send(intents.release(intent_id, fence))

    def intent(self, holder: str, scope: intents.ScopeLike, *, mode: Optional[str] = None, ttl_ms: int = 30000,
               description: Optional[str] = None) -> intents.AsyncHeldIntent:
        """``async with client.intent(holder, scope) as it:``: renewed on a
        task; on loss the body is cancelled and StaleFence raised (see
        promptd.intents)."""
        return intents.AsyncHeldIntent(self, holder, scope, mode, ttl_ms, description)

    # Events (stream and JSON long-poll) and exposures.
    def events(self, since: Optional[str] = None, *, actions: Optional[str] = None, agent: Optional[str] = None,
               env: Optional[str] = None, board: Optional[str] = None) -> AsyncIterator[dict[str, Any]]:
        """``async for ev in client.events(since="0"):`` the change feed,
        reconnecting with Last-Event-ID (see promptd.stream)."""
        return stream.aevents(self, since, actions, agent, env, board)

    async def poll_events(self, since: Optional[str] = None, wait_ms: Optional[int] = None, limit: Optional[int] = None,
                          actions: Optional[str] = None, agent: Optional[str] = None,
                          env: Optional[str] = None) -> Page[dict[str, Any]]:
        return await self._send(_calls.poll_events(since, wait_ms, limit, actions, agent, env))

    async def get_exposures(self, agent: str, env: str, frm: Optional[str] = None, to: Optional[str] = None) -> list[
            dict[str, Any]]:
        items: list[dict[str, Any]] = []
        cursor: Optional[str] = None
        while True:
            page = await self._send(_calls.get_exposures(agent, env, frm, to, cursor))
            items.extend(page.items)
            if not page.next:
                return items
            cursor = page.next

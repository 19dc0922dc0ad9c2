// PromptdSessionService: ADK's session service on promptd sessions.
//
// One ADK session is one promptd session (agent = the app, by default). Each
// event is one turn, appended with the revision the ADK Session object was
// read at: the append is the compare-and-set of both the history and the
// session state (the fold of the events' state deltas), so a concurrent run
// that appended first makes this one fail with SessionConflictError instead
// of overwriting it. app: and user: keys live in scope sessions, one entry per
// key, each written at the revision read (scopes.ts). runExclusive holds the
// session's lease for a whole run so concurrent runs queue instead of
// conflicting; the lease's fence goes with every write.

import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";
import { BaseSessionService, State, createSession as adkSession } from "@google/adk";
import type {
  AppendEventRequest, CreateSessionRequest, DeleteSessionRequest, Event, GetSessionRequest, ListSessionsRequest,
  ListSessionsResponse, Session,
} from "@google/adk";
import {
  RevisionConflictError, SessionNotFoundError, withSessionLease, type Client, type HeldLease, type Session as PromptdSession,
  type SessionSummary, type Turn,
} from "@promptd/client";
import { SessionConflictError } from "./errors.js";
import { eventTurn, initTurn, readTurn } from "./events.js";
import { appScopeId, entryKey, isPromptdId, isScopeSessionId, userScopeId } from "./keys.js";
import { readScope, setScopeKey, writeScopeKey, type Scope } from "./scopes.js";

export interface PromptdSessionServiceOptions {
  /** A client with a runtime (or admin) token. */
  client: Client;
  /** The promptd env sessions are created in (it needs a version pointer). */
  env: string;
  /** The promptd agent of an ADK app (default: the app name itself). Map each app to its own agent. */
  agentFor?: (appName: string) => string;
  /** Idle TTL of the sessions created (promptd's default when left out). */
  idleTtlMs?: number;
  /** The lease holder name runExclusive uses (default `@promptd/adk <pid> <random>`). */
  holder?: string;
  /** runExclusive's lease TTL (default 10,000 ms; renewed every third of it). */
  leaseTtlMs?: number;
  /** How long runExclusive waits for another run's lease (default 30,000 ms, promptd's maximum). */
  leaseWaitMs?: number;
}

/** What the service remembers about a Session object it handed out. */
interface Track {
  /** The promptd session revision the object reflects. */
  revision: number;
  /** Per scope session id: entry key -> revision read (or written). */
  scopeRevisions: Map<string, Map<string, number>>;
}

type Scoped = "app" | "user" | "session";

function scopeOf(key: string): Scoped {
  if (key.startsWith(State.APP_PREFIX)) return "app";
  if (key.startsWith(State.USER_PREFIX)) return "user";
  return "session";
}

/** Sets o[k] = v as an own property, whatever k is (a state key may be `__proto__`). */
function set(o: Record<string, unknown>, k: string, v: unknown): void {
  Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
}

/** The delta that is persisted: temp: keys never are. */
function persisted(delta: Record<string, unknown> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(delta ?? {})) if (!k.startsWith(State.TEMP_PREFIX)) set(out, k, v);
  return out;
}

export class PromptdSessionService extends BaseSessionService {
  readonly client: Client;
  readonly env: string;
  private readonly agentFor: (appName: string) => string;
  private readonly idleTtlMs: number | undefined;
  private readonly holder: string;
  private readonly leaseTtlMs: number;
  private readonly leaseWaitMs: number;
  private readonly tracks = new WeakMap<Session, Track>();
  /** The leases runExclusive holds in this async context, by session id. */
  private readonly leases = new AsyncLocalStorage<ReadonlyMap<string, HeldLease>>();

  constructor(o: PromptdSessionServiceOptions) {
    super();
    this.client = o.client;
    this.env = o.env;
    this.agentFor = o.agentFor ?? ((a) => a);
    this.idleTtlMs = o.idleTtlMs;
    this.holder = o.holder ?? `@promptd/adk ${String(process.pid)} ${randomUUID().slice(0, 8)}`;
    this.leaseTtlMs = o.leaseTtlMs ?? 10_000;
    this.leaseWaitMs = o.leaseWaitMs ?? 30_000;
  }

  private agent(appName: string): string {
    const a = this.agentFor(appName);
    if (!isPromptdId(a)) throw new Error(`ADK app ${JSON.stringify(appName)} maps to promptd agent ${JSON.stringify(a)}, which is not a promptd identifier: set agentFor`);
    return a;
  }

  private appScope(appName: string): Scope {
    return { kind: "app", id: appScopeId(appName), agent: this.agent(appName), env: this.env };
  }

  private userScope(appName: string, userId: string): Scope {
    return { kind: "user", id: userScopeId(appName, userId), agent: this.agent(appName), env: this.env, userId };
  }

  private held(sessionId: string): HeldLease | undefined {
    return this.leases.getStore()?.get(sessionId);
  }

  override async createSession({ appName, userId, state, sessionId }: CreateSessionRequest): Promise<Session> {
    const id = sessionId ?? randomUUID();
    if (!isPromptdId(id) || isScopeSessionId(id)) {
      throw new Error(`session id ${JSON.stringify(id)}: 1..128 of [A-Za-z0-9._-], first alphanumeric, not starting with adk-app. or adk-user.`);
    }
    const body: Record<string, unknown> = { agent: this.agent(appName), env: this.env, session_id: id, user_id: userId, metadata: { adk_app: appName } };
    if (this.idleTtlMs !== undefined) body["idle_ttl_ms"] = this.idleTtlMs;
    const created = await this.client.http.do<PromptdSession>({ method: "POST", path: "/v1/sessions", body, idempotent: true });
    if (created.status !== 201) throw new Error(`session ${id} already exists`);

    const own: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(persisted(state))) {
      const s = scopeOf(k);
      if (s === "session") set(own, k, v);
      else if (s === "app") await setScopeKey(this.client, this.appScope(appName), k.slice(State.APP_PREFIX.length), v);
      else await setScopeKey(this.client, this.userScope(appName, userId), k.slice(State.USER_PREFIX.length), v);
    }
    if (Object.keys(own).length > 0) await this.client.appendTurns(id, [initTurn(own)], { expectedRevision: 0 });
    const s = await this.getSession({ appName, userId, sessionId: id });
    if (!s) throw new Error(`session ${id} vanished after its create`);
    return s;
  }

  /** Every turn of a session (pages of 500), with the first page's head; undefined when there is none. */
  private async readAll(id: string): Promise<{ head: PromptdSession; turns: Turn[] } | undefined> {
    let head: PromptdSession | undefined;
    const turns: Turn[] = [];
    let since = 0;
    for (;;) {
      let page: PromptdSession;
      try {
        page = await this.client.getSession(id, { since, limit: 500 });
      } catch (err) {
        if (err instanceof SessionNotFoundError) return undefined;
        throw err;
      }
      // The first page's revision is the one writes are checked against: a turn a later page
      // adds on top of it makes the next append conflict, never pass.
      head ??= page;
      turns.push(...(page.turns ?? []));
      if (page.next_since === null || page.next_since === undefined || (page.turns ?? []).length === 0) break;
      since = page.next_since;
    }
    return { head, turns };
  }

  private belongs(h: SessionSummary, appName: string, userId: string): boolean {
    return h.state === "open" && h.agent === this.agent(appName) && h.env === this.env && (h.user_id ?? "") === userId && !isScopeSessionId(h.session_id);
  }

  override async getSession({ appName, userId, sessionId, config }: GetSessionRequest): Promise<Session | undefined> {
    if (!isPromptdId(sessionId) || isScopeSessionId(sessionId)) return undefined;
    const all = await this.readAll(sessionId);
    if (!all || !this.belongs(all.head, appName, userId)) return undefined;

    const state: Record<string, unknown> = {};
    let events: Event[] = [];
    for (const t of all.turns) {
      const { event, delta } = readTurn(t);
      for (const [k, v] of Object.entries(delta)) if (scopeOf(k) === "session" && !k.startsWith(State.TEMP_PREFIX)) set(state, k, v);
      if (event) events.push(event);
    }
    const track: Track = { revision: all.head.revision, scopeRevisions: new Map() };
    for (const scope of [this.appScope(appName), this.userScope(appName, userId)]) {
      const read = await readScope(this.client, scope);
      track.scopeRevisions.set(scope.id, read.revisions);
      const prefix = scope.kind === "app" ? State.APP_PREFIX : State.USER_PREFIX;
      for (const [k, v] of Object.entries(read.values)) set(state, prefix + k, v);
    }

    if (config?.numRecentEvents) events = events.slice(-config.numRecentEvents);
    if (config?.afterTimestamp) {
      const after = config.afterTimestamp;
      events = events.filter((e) => e.timestamp >= after);
    }
    const session = adkSession({ id: sessionId, appName, userId, state, events, lastUpdateTime: Date.parse(all.head.updated_at) });
    this.tracks.set(session, track);
    return session;
  }

  override async listSessions({ appName, userId, limit, offset, page, order }: ListSessionsRequest): Promise<ListSessionsResponse> {
    const agent = this.agent(appName);
    const found: Session[] = [];
    let cursor: string | undefined;
    do {
      const p = await this.client.listSessions({ agent, env: this.env, state: "open", limit: 500, ...(cursor ? { cursor } : {}) });
      for (const s of p.items) {
        if (isScopeSessionId(s.session_id) || (userId !== undefined && s.user_id !== userId)) continue;
        found.push(adkSession({ id: s.session_id, appName, userId: s.user_id ?? "", state: {}, events: [], lastUpdateTime: Date.parse(s.updated_at) }));
      }
      cursor = p.next ?? undefined;
    } while (cursor);
    if (order === "asc") found.sort((a, b) => a.lastUpdateTime - b.lastUpdateTime || a.id.localeCompare(b.id));
    else if (order === "desc") found.sort((a, b) => b.lastUpdateTime - a.lastUpdateTime || a.id.localeCompare(b.id));

    // Paging as ADK's InMemorySessionService does it.
    const totalItems = found.length;
    if (limit === undefined) {
      return { sessions: offset ? found.slice(offset) : found, page: 1, limit: totalItems, totalItems, totalPages: totalItems === 0 ? 0 : 1 };
    }
    const start = page !== undefined ? (page - 1) * limit : offset ?? 0;
    return {
      sessions: found.slice(start, start + limit),
      page: page ?? (limit === 0 ? 1 : Math.floor(start / limit) + 1),
      limit,
      totalItems,
      totalPages: limit === 0 ? 0 : Math.ceil(totalItems / limit),
    };
  }

  /**
   * Closes the promptd session (promptd keeps closed sessions for its
   * retention period and has no delete): it no longer reads or lists, and its
   * id cannot be created again.
   */
  override async deleteSession({ appName, userId, sessionId }: DeleteSessionRequest): Promise<void> {
    if (!isPromptdId(sessionId) || isScopeSessionId(sessionId)) return;
    for (let attempt = 1; ; attempt++) {
      let head: PromptdSession;
      try {
        head = await this.client.getSession(sessionId, { limit: 1 });
      } catch (err) {
        if (err instanceof SessionNotFoundError) return;
        throw err;
      }
      if (!this.belongs(head, appName, userId)) return;
      const held = this.held(sessionId);
      try {
        if (held) await held.close(head.revision);
        else await this.client.closeSession(sessionId, { expectedRevision: head.revision });
        return;
      } catch (err) {
        if (!(err instanceof RevisionConflictError) || attempt >= 5) throw err;
      }
    }
  }

  /**
   * Appends the event at the revision the Session was read at. Its app: and
   * user: keys are written first, each at the revision read
   * (StateConflictError when another session changed one); then the turn
   * (SessionConflictError when another writer appended to this session).
   * Either way the Session object is left as it was; on success it gets the
   * event and the delta, as ADK's base class applies them.
   */
  override async appendEvent({ session, event }: AppendEventRequest): Promise<Event> {
    if (event.partial) return event;
    const track = this.tracks.get(session);
    if (!track) throw new Error("appendEvent: the Session was not read from this PromptdSessionService (createSession or getSession)");
    const delta = persisted(event.actions?.stateDelta);
    const held = this.held(session.id);
    if (held?.lostError) throw held.lostError;

    const scoped = Object.keys(delta).filter((k) => scopeOf(k) !== "session");
    if (scoped.length > 0) {
      // Fail before any scope write when the session already moved on (the append below would).
      const head = await this.client.getSession(session.id, { limit: 1 });
      if (head.revision !== track.revision) throw new SessionConflictError(session.id, track.revision, head.revision);
      for (const k of scoped) {
        const app = scopeOf(k) === "app";
        const scope = app ? this.appScope(session.appName) : this.userScope(session.appName, session.userId);
        const bare = k.slice(app ? State.APP_PREFIX.length : State.USER_PREFIX.length);
        let revs = track.scopeRevisions.get(scope.id);
        if (!revs) track.scopeRevisions.set(scope.id, (revs = new Map<string, number>()));
        const ek = entryKey(bare);
        revs.set(ek, await writeScopeKey(this.client, scope, bare, delta[k], revs.get(ek) ?? 0));
      }
    }

    const turn = eventTurn(event, delta);
    try {
      const r = held
        ? await held.appendTurns([turn], track.revision)
        : await this.client.appendTurns(session.id, [turn], { expectedRevision: track.revision });
      track.revision = r.revision;
    } catch (err) {
      if (err instanceof RevisionConflictError) {
        const cur = err.fields["current_revision"];
        throw new SessionConflictError(session.id, track.revision, typeof cur === "number" ? cur : undefined, err);
      }
      throw err;
    }
    await super.appendEvent({ session, event });
    session.lastUpdateTime = event.timestamp;
    return event;
  }

  /**
   * Runs work while this process holds the session's promptd lease: other
   * runs through runExclusive wait for it (up to leaseWaitMs), and writes
   * without the lease are refused (423 lease_held) while it is held. Call
   * runner.runAsync inside work, so its getSession reads after the previous
   * run's last event. The lease renews itself; when it is lost, signal
   * aborts and writes fail with LeaseLostError.
   */
  async runExclusive<T>(sessionId: string, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const outer = this.leases.getStore();
    if (outer?.has(sessionId)) throw new Error(`runExclusive: this async context already holds session ${sessionId}`);
    return withSessionLease(this.client, sessionId, this.holder, { ttlMs: this.leaseTtlMs, mode: "wait", waitMs: this.leaseWaitMs }, (held, signal) => {
      const map = new Map(outer ?? []);
      map.set(sessionId, held);
      return this.leases.run(map, () => work(signal));
    });
  }
}

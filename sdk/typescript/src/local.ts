// LocalPrompts: resolve and assemble in process from GET /v1/bundle, with
// exactly the server's rules, kept current by the event stream (SSE), with
// conditional polling while the stream is down and a disk copy for a cold
// start while promptd is down. After warm-up a resolve makes no network call.

import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import type { Client } from "./client.js";
import { AgentNotFoundError, NoPointerError } from "./errors.js";
import { AskServer, resolveLocal } from "./evaluate.js";
import { backoffMs, sleep } from "./http.js";
import { assembleOpenAI, assemblePlain, checkBundleFormat, type Picked } from "./assemble.js";
import { ExposureBatcher } from "./exposures.js";
import { parseSSE } from "./sse.js";
import type { AssembleRequest, AssembledPlain, Bundle, Caller, OpenAIChatBody, Resolved } from "./types.js";

export interface LocalPromptsOptions {
  client: Client;
  agents?: string[];
  envs?: string[];
  /** The last good bundle is written here (tmp + rename) and read for a cold start. */
  cachePath?: string;
  /** Follow the event stream (default true). */
  stream?: boolean;
  /** Conditional polling period while the stream is down, ms (default 2000). */
  pollMs?: number;
  /** Exposure flush period, ms (default 10000; 0: only on flush()/close()). */
  exposureFlushMs?: number;
  /** Report exposures of local resolves (default true). */
  exposures?: boolean;
  onError?: (err: unknown) => void;
  /** Called for every change event read from the stream (before the refetch it may start). */
  onEvent?: (action: string, data: string) => void;
}

const RELEVANT = /^(version\.|pointer\.|release\.|env\.)/;

export class LocalPrompts {
  private readonly o: LocalPromptsOptions;
  private readonly client: Client;
  private bundle: Bundle | undefined;
  private etag: string | undefined;
  private lastEventId: string | undefined;
  private readonly ac = new AbortController();
  private readonly pins = new Map<string, { agent: string; env: string; version: number; userId: string | undefined }>();
  private refetching: Promise<void> | undefined;
  private again = false;
  private streamUp = false;
  private loops: Promise<void>[] = [];
  private timer: ReturnType<typeof setInterval> | undefined;
  readonly exposures: ExposureBatcher;
  /** Counters for tests and figures. */
  readonly stats = { local: 0, server: 0, bundleFetches: 0, notModified: 0, events: 0, fromDisk: false };
  private listeners: ((b: Bundle) => void)[] = [];

  constructor(o: LocalPromptsOptions) {
    this.o = o;
    this.client = o.client;
    this.exposures = new ExposureBatcher(o.client);
  }

  /** Loads the bundle (from promptd, else from cachePath) and starts following changes. */
  async start(): Promise<this> {
    try {
      await this.refetch();
    } catch (err) {
      if (!this.o.cachePath) throw err;
      const disk = await readFile(this.o.cachePath, "utf8").catch(() => undefined);
      if (!disk) throw err;
      const saved = JSON.parse(disk) as { etag?: string; bundle: Bundle };
      this.bundle = saved.bundle;
      if (saved.etag) this.etag = saved.etag;
      this.stats.fromDisk = true;
      this.o.onError?.(err);
    }
    if (this.o.stream !== false) this.loops.push(this.follow());
    this.loops.push(this.poll());
    const every = this.o.exposureFlushMs ?? 10_000;
    if (every > 0 && this.o.exposures !== false) {
      this.timer = setInterval(() => void this.exposures.flush().catch((e: unknown) => this.o.onError?.(e)), every);
      this.timer.unref?.();
    }
    return this;
  }

  /** The bundle's feed position. */
  get cursor(): string | undefined {
    return this.bundle?.cursor;
  }
  get streaming(): boolean {
    return this.streamUp;
  }
  /** Called after each new bundle is applied. */
  onUpdate(f: (b: Bundle) => void): void {
    this.listeners.push(f);
  }

  /** Stops following, flushes exposures. */
  async close(): Promise<void> {
    this.ac.abort();
    if (this.timer) clearInterval(this.timer);
    await Promise.allSettled(this.loops);
    if (this.o.exposures !== false) await this.exposures.flush();
  }

  // Fetching.

  /** Conditional GET of the bundle (coalesced: at most one in flight, one queued). */
  refetch(): Promise<void> {
    if (this.refetching) {
      this.again = true;
      return this.refetching;
    }
    this.refetching = (async () => {
      try {
        do {
          this.again = false;
          this.stats.bundleFetches++;
          const filter = { ...(this.o.agents ? { agents: this.o.agents } : {}), ...(this.o.envs ? { envs: this.o.envs } : {}) };
          const got = await this.client.bundle(filter, this.bundle ? this.etag : undefined, { signal: this.ac.signal });
          if (got === null) {
            this.stats.notModified++;
            continue;
          }
          this.bundle = got.bundle;
          if (got.etag) this.etag = got.etag;
          for (const f of this.listeners) f(got.bundle);
          if (this.o.cachePath) await this.save();
        } while (this.again);
      } finally {
        this.refetching = undefined;
      }
    })();
    return this.refetching;
  }

  private async save(): Promise<void> {
    const path = this.o.cachePath!;
    await mkdir(dirname(path), { recursive: true });
    const tmp = `${path}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
    await writeFile(tmp, JSON.stringify({ etag: this.etag, bundle: this.bundle }), { mode: 0o600 });
    await rename(tmp, path);
  }

  /** Follows GET /v1/events (SSE) from the bundle's cursor; reconnects with Last-Event-ID and backoff. */
  private async follow(): Promise<void> {
    for (let attempt = 0; !this.ac.signal.aborted; ) {
      try {
        const headers: Record<string, string> = { accept: "text/event-stream" };
        if (this.lastEventId) headers["last-event-id"] = this.lastEventId;
        const since = this.lastEventId ?? this.bundle?.cursor;
        const res = await this.client.http.raw("/v1/events", { headers, signal: this.ac.signal, query: { since } });
        if (!res.ok || !res.body) throw new Error(`events: HTTP ${res.status}`);
        this.streamUp = true;
        attempt = 0;
        // A change between the bundle and the stream's start is in the stream (since = cursor).
        for await (const m of parseSSE(res.body)) {
          if (m.id !== undefined) this.lastEventId = m.id;
          if (m.event === "progress") continue;
          this.stats.events++;
          this.o.onEvent?.(m.event, m.data);
          if (RELEVANT.test(m.event) && this.wants(m.data)) void this.refetch().catch((e: unknown) => this.o.onError?.(e));
        }
        throw new Error("events: stream ended");
      } catch (err) {
        this.streamUp = false;
        if (this.ac.signal.aborted) return;
        this.o.onError?.(err);
        await sleep(backoffMs(attempt++, 5000, 200), this.ac.signal).catch(() => undefined);
      }
    }
  }

  private wants(data: string): boolean {
    try {
      const ev = JSON.parse(data) as { agent?: string; env?: string };
      if (this.o.agents && ev.agent && !this.o.agents.includes(ev.agent)) return false;
      if (this.o.envs && ev.env && !this.o.envs.includes(ev.env)) return false;
    } catch {
      /* refetch on anything unreadable */
    }
    return true;
  }

  /** While the stream is down (or disabled), polls the bundle conditionally. */
  private async poll(): Promise<void> {
    const every = this.o.pollMs ?? 2000;
    while (!this.ac.signal.aborted) {
      await sleep(every, this.ac.signal).catch(() => undefined);
      if (this.ac.signal.aborted) return;
      if (this.streamUp && this.bundle) continue;
      await this.refetch().catch((e: unknown) => this.o.onError?.(e));
    }
  }

  // Resolving.

  /**
   * The local decision (the conformance-checked evaluator over the current
   * bundle), or undefined when the server must decide: an agent or env the
   * bundle lacks, a session whose pin is unknown or revoked, a version the
   * bundle does not hold, a bundle format this SDK does not know. Bad input
   * throws the server's typed error.
   */
  pick(agent: string, env: string, who: Caller = {}): Picked | undefined {
    if (!this.bundle) return undefined;
    const pin = who.sessionId !== undefined ? this.pins.get(who.sessionId) : undefined;
    const userId = pin?.userId ?? who.userId; // a session's user wins, as on the server
    try {
      checkBundleFormat(this.bundle); // a format it does not know: the server answers
      return resolveLocal(this.bundle, {
        agent, env,
        ...(userId !== undefined ? { user_id: userId } : {}),
        ...(who.sessionId !== undefined ? { session_id: who.sessionId } : {}),
        ...(pin && pin.agent === agent && pin.env === env ? { pinned_version: pin.version } : {}),
      }).picked;
    } catch (err) {
      if (err instanceof AskServer || err instanceof AgentNotFoundError || err instanceof NoPointerError) return undefined;
      throw err;
    }
  }

  /** Tells LocalPrompts a session's pin (as the session's create answer gave it), so it resolves locally. */
  rememberSession(s: { session_id: string; agent: string; env: string; pinned_version: number; user_id?: string | null }): void {
    this.pins.set(s.session_id, { agent: s.agent, env: s.env, version: s.pinned_version, userId: s.user_id ?? undefined });
  }

  private count(agent: string, env: string, p: Picked): void {
    this.stats.local++;
    if (this.o.exposures === false) return;
    this.exposures.add({ agent, env, version: p.version, ...(p.release ? { release_id: p.release.id, arm: p.release.arm } : {}) });
  }

  /** Resolves locally; the server decides what the bundle cannot (and sessions the first time). */
  async resolve(agent: string, env: string, who: Caller = {}): Promise<Resolved> {
    const p = this.pick(agent, env, who);
    if (p) {
      this.count(agent, env, p);
      return { agent, env, version: p.version, content_hash: p.content_hash, config: p.config, release: p.release, pinned: p.pinned, repinned_from: null };
    }
    if (!this.bundle) throw new AgentNotFoundError(404, "agent_not_found", "no bundle loaded");
    this.stats.server++;
    const r = await this.client.resolve(agent, env, who);
    if (who.sessionId !== undefined && r.pinned) this.pins.set(who.sessionId, { agent, env, version: r.version, userId: who.userId });
    return r;
  }

  /** Assembles locally (no session history); with history, or when the server must decide, asks the server. */
  async assemble(agent: string, env: string, req: AssembleRequest, format?: "plain"): Promise<AssembledPlain>;
  async assemble(agent: string, env: string, req: AssembleRequest, format: "openai"): Promise<OpenAIChatBody>;
  async assemble(agent: string, env: string, req: AssembleRequest, format: "plain" | "openai" = "plain"): Promise<AssembledPlain | OpenAIChatBody> {
    const who: Caller = { ...(req.userId !== undefined ? { userId: req.userId } : {}), ...(req.sessionId !== undefined ? { sessionId: req.sessionId } : {}) };
    const p = req.sessionId !== undefined && req.history !== false ? undefined : this.pick(agent, env, who);
    if (p) {
      const out = format === "openai" ? assembleOpenAI(p, req.variables) : assemblePlain(p, req.variables);
      this.count(agent, env, p);
      return out;
    }
    this.stats.server++;
    return format === "openai"
      ? (await this.client.assemble(agent, env, req, "openai")).body
      : (await this.client.assemble(agent, env, req)).body;
  }
}

// The transport: bearer token, problem+json -> typed errors, Idempotency-Key
// kept across retries, bounded jittered backoff, caller signal and
// traceparent.

import { PromptdError, errorFromProblem } from "./errors.js";

/** Per-call options: every Client method takes them last. */
export interface CallOptions {
  /** Cancels the call (and its retries). */
  signal?: AbortSignal;
  /** W3C trace context of the caller, sent as `traceparent`. */
  traceparent?: string;
  /** Idempotency-Key for routes that take one; default: a new key per logical call. */
  idempotencyKey?: string;
}

export interface TransportOptions {
  baseUrl: string;
  token: string;
  /** The fetch to use (tests count calls through it). Default: global fetch. */
  fetch?: typeof fetch;
  /** Retries after the first attempt (default 3). */
  retries?: number;
  /** Cap on one backoff wait, ms (default 2000); a Retry-After is honoured up to 4x this. */
  maxRetryWaitMs?: number;
  /** Per-attempt timeout, ms (default 30000; long waits add their wait_ms). */
  timeoutMs?: number;
  userAgent?: string;
}

export interface Request {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  path: string;
  /** An array is a repeated parameter (`?agent=a&agent=b`). */
  query?: Record<string, string | number | boolean | readonly string[] | undefined>;
  body?: unknown;
  headers?: Record<string, string>;
  /** The route takes Idempotency-Key (api/openapi.yaml, Conventions). */
  idempotent?: boolean;
  /** Answers with these statuses are returned, not thrown (e.g. 304, 204). */
  accept?: number[];
  /** Extra per-attempt time for server-side waits (wait_ms). */
  extraTimeoutMs?: number;
}

export interface Answer<T> {
  status: number;
  headers: Headers;
  body: T;
}

/** A transport failure (no HTTP answer): network error or timeout. */
export class TransportError extends Error {
  override readonly cause: unknown;
  constructor(message: string, cause: unknown) {
    super(message);
    this.name = "TransportError";
    this.cause = cause;
  }
}

export function newIdempotencyKey(): string {
  return "idem-" + crypto.randomUUID();
}

export function retryAfterMs(h: Headers): number | undefined {
  const v = h.get("retry-after");
  if (v === null) return undefined;
  const s = Number(v);
  if (Number.isFinite(s) && s >= 0) return s * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/** Full-jitter exponential backoff: uniform in [0, min(cap, base*2^n)]. */
export function backoffMs(attempt: number, capMs: number, baseMs = 100): number {
  return Math.random() * Math.min(capMs, baseMs * 2 ** attempt);
}

function asError(v: unknown): Error {
  return v instanceof Error ? v : new Error(String(v));
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(asError(signal.reason));
      return;
    }
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(t);
      reject(asError(signal?.reason));
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

function refused(err: unknown): boolean {
  // undici wraps the socket error: TypeError("fetch failed", {cause: {code}}).
  const cause = (err as { cause?: { code?: string } } | undefined)?.cause;
  return cause?.code === "ECONNREFUSED";
}

export class Transport {
  readonly baseUrl: string;
  private readonly token: string;
  private readonly fetchFn: typeof fetch;
  private readonly retries: number;
  private readonly maxWait: number;
  private readonly timeoutMs: number;
  private readonly userAgent: string;

  constructor(o: TransportOptions) {
    this.baseUrl = o.baseUrl.replace(/\/+$/, "");
    this.token = o.token;
    this.fetchFn = o.fetch ?? globalThis.fetch.bind(globalThis);
    this.retries = Math.max(0, o.retries ?? 3);
    this.maxWait = o.maxRetryWaitMs ?? 2000;
    this.timeoutMs = o.timeoutMs ?? 30_000;
    this.userAgent = o.userAgent ?? "promptd-typescript/0.1";
  }

  url(path: string, query?: Request["query"]): string {
    let u = this.baseUrl + path;
    if (query) {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(query)) {
        if (v === undefined) continue;
        if (Array.isArray(v)) for (const x of v as readonly string[]) q.append(k, x);
        else q.set(k, String(v));
      }
      const s = q.toString();
      if (s) u += "?" + s;
    }
    return u;
  }

  headers(opts: CallOptions | undefined, extra?: Record<string, string>): Record<string, string> {
    const h: Record<string, string> = {
      authorization: `Bearer ${this.token}`,
      "user-agent": this.userAgent,
      ...extra,
    };
    if (opts?.traceparent) h["traceparent"] = opts.traceparent;
    return h;
  }

  /** Raw fetch with auth and trace headers; no retries, no error mapping (streams). */
  raw(path: string, init: { headers?: Record<string, string>; signal?: AbortSignal; query?: Request["query"] }, opts?: CallOptions): Promise<Response> {
    const signal = init.signal ?? opts?.signal;
    return this.fetchFn(this.url(path, init.query), {
      method: "GET",
      headers: this.headers(opts, init.headers),
      ...(signal ? { signal } : {}),
    });
  }

  async do<T>(req: Request, opts?: CallOptions): Promise<Answer<T>> {
    const key = req.idempotent ? (opts?.idempotencyKey ?? newIdempotencyKey()) : undefined;
    const body = req.body === undefined ? undefined : JSON.stringify(req.body);
    const headers = this.headers(opts, req.headers);
    if (body !== undefined) headers["content-type"] = "application/json";
    if (key) headers["idempotency-key"] = key;
    // A GET, and a write that carries an Idempotency-Key, may be sent again
    // after any failure; other writes only when the server surely did not
    // act (connection refused, or 503 with Retry-After: nothing was changed).
    const safe = req.method === "GET" || key !== undefined;
    const url = this.url(req.path, req.query);
    for (let attempt = 0; ; attempt++) {
      opts?.signal?.throwIfAborted();
      const timeout = AbortSignal.timeout(this.timeoutMs + (req.extraTimeoutMs ?? 0));
      const signal = opts?.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
      let res: Response;
      try {
        res = await this.fetchFn(url, { method: req.method, headers, ...(body !== undefined ? { body } : {}), signal });
      } catch (err) {
        if (opts?.signal?.aborted) throw asError(opts.signal.reason);
        if (attempt < this.retries && (safe || refused(err))) {
          await sleep(backoffMs(attempt, this.maxWait), opts?.signal);
          continue;
        }
        throw new TransportError(`${req.method} ${req.path}: ${(err as Error).message}`, err);
      }
      if (res.ok || req.accept?.includes(res.status)) {
        const text = res.status === 204 || res.status === 304 ? "" : await res.text();
        const ct = res.headers.get("content-type") ?? "";
        const parsed: unknown = text === "" ? undefined : ct.includes("json") ? (JSON.parse(text) as unknown) : text;
        return { status: res.status, headers: res.headers, body: parsed as T };
      }
      const text = await res.text();
      let problem: unknown;
      try {
        problem = JSON.parse(text);
      } catch {
        problem = { detail: text.slice(0, 200) };
      }
      const ra = retryAfterMs(res.headers);
      const err: PromptdError = errorFromProblem(res.status, problem, ra);
      const retryable = res.status >= 500 && (safe || (res.status === 503 && ra !== undefined));
      if (attempt < this.retries && retryable) {
        const wait = ra !== undefined ? Math.min(ra, 4 * this.maxWait) : backoffMs(attempt, this.maxWait);
        await sleep(wait, opts?.signal);
        continue;
      }
      throw err;
    }
  }
}

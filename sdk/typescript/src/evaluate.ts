// The local evaluator: resolve and assemble from a bundle with exactly the
// server's rules (the Go twin is package bundle; testdata/conformance holds
// the vectors both run). Throws the server's typed errors, or AskServer when
// only the server can answer (an unknown or revoked pin, a version the
// bundle lacks).

import { createHash } from "node:crypto";
import { InvalidFieldError, InvalidIdError, AgentNotFoundError, NoPointerError } from "./errors.js";
import { assembleOpenAI, assemblePlain, checkBundleFormat, type Picked } from "./assemble.js";
import { bucket } from "./murmur3.js";
import type { AssembledPlain, Bundle, BundleRelease, Message, OpenAIChatBody, ReleaseTrace, Resolved } from "./types.js";

export const DEFAULT_MAX_HISTORY_TURNS = 1000;
export const MAX_HISTORY_TURNS_REQUEST = 10000;

/** A request to evaluate (the conformance vectors' request shape). */
export interface LocalRequest {
  agent: string;
  env: string;
  user_id?: string;
  session_id?: string;
  /** The session's pin as its create answer gave it; without it a session goes to the server. */
  pinned_version?: number;
  variables?: Record<string, unknown>;
  /** The session's turns, oldest first (only with a session). */
  history?: Message[];
  max_history_turns?: number;
  format?: string;
}

/** Only the server can answer: send the request there. */
export class AskServer extends Error {
  readonly reason: "pin_unknown" | "pin_revoked" | "version_missing" | "format_unknown";
  constructor(reason: AskServer["reason"]) {
    super(`ask the server: ${reason}`);
    this.name = "AskServer";
    this.reason = reason;
  }
}

const ID_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]*$/u;

function validOpaque(s: string): boolean {
  return !LONE_SURROGATE.test(s) && Buffer.byteLength(s, "utf8") <= 256 && PRINTABLE.test(s);
}

function validate(req: LocalRequest): void {
  for (const [name, v] of [["agent", req.agent], ["env", req.env], ["session_id", req.session_id]] as const) {
    if (name === "session_id" && (v === undefined || v === "")) continue;
    if (v === undefined || !ID_RE.test(v)) throw new InvalidIdError(400, "invalid_id", `${name} must be 1..128 of [A-Za-z0-9._-], first alphanumeric`, { field: name });
  }
  if (req.user_id !== undefined && req.user_id !== "" && !validOpaque(req.user_id)) {
    throw new InvalidIdError(400, "invalid_id", "user_id must be 1..256 bytes of printable UTF-8", { field: "user_id" });
  }
}

/** percent as the shortest decimal of basis points (1250 -> 12.5). */
export function percentOf(bp: number): number {
  return bp / 100;
}

function decide(r: BundleRelease, revoked: readonly number[], userId: string, sessionId: string): { version: number; trace: ReleaseTrace } {
  const trace: ReleaseTrace = { id: r.id, arm: "baseline", bucket: null, percent: percentOf(r.basis_points), reason: "bucket" };
  const key = r.stickiness === "session" || userId === "" ? sessionId : userId;
  if (key !== "") {
    const b = bucket(r.id, key);
    trace.bucket = b;
    const ov = r.overrides;
    let forced: "candidate" | "baseline" | undefined;
    if (ov && (ov.candidate?.length ?? 0) + (ov.baseline?.length ?? 0) > 0) {
      const h = createHash("sha256").update(`${r.id}:${key}`).digest("hex");
      if (ov.candidate?.some((x) => x.toLowerCase() === h)) forced = "candidate";
      else if (ov.baseline?.some((x) => x.toLowerCase() === h)) forced = "baseline";
    }
    if (forced) {
      trace.arm = forced;
      trace.reason = "override";
    } else if (b < r.basis_points) {
      trace.arm = "candidate";
    }
  }
  let version = trace.arm === "candidate" ? r.candidate_version : r.baseline_version;
  if (trace.arm === "candidate" && revoked.includes(r.candidate_version)) {
    trace.arm = "baseline";
    version = r.baseline_version;
  }
  return { version, trace };
}

/** Resolves like GET .../prompt. */
export function resolveLocal(b: Bundle, req: LocalRequest): Resolved & { picked: Picked } {
  checkBundleFormat(b); // a format it does not know: only the server can answer
  validate(req);
  const a = b.agents[req.agent];
  if (!a) throw new AgentNotFoundError(404, "agent_not_found", `no agent ${req.agent}`);
  const e = a.envs[req.env];
  if (!e) throw new NoPointerError(409, "no_pointer", `env ${req.env} has no pointer`);
  const rel = e.release && (e.release.state === "running" || e.release.state === "paused") ? e.release : null;
  let version = e.version;
  let release: ReleaseTrace | null = null;
  let pinned = false;
  if (rel) ({ version, trace: release } = decide(rel, e.revoked, req.user_id ?? "", req.session_id ?? ""));
  if (req.session_id) {
    const pin = req.pinned_version ?? 0;
    if (pin <= 0) throw new AskServer("pin_unknown");
    if (e.revoked.includes(pin)) throw new AskServer("pin_revoked");
    version = pin;
    pinned = true;
    if (rel && release) {
      const arm = pin === rel.candidate_version ? "candidate" : pin === rel.baseline_version ? "baseline" : undefined;
      release = arm ? { ...release, arm, reason: "pinned" } : null;
    } else {
      release = null;
    }
  }
  const v = a.versions[String(version)];
  if (!v) throw new AskServer("version_missing");
  const picked: Picked = { version, content_hash: v.content_hash, config: v.config, release, pinned };
  return { agent: req.agent, env: req.env, version, content_hash: v.content_hash, config: v.config, release, pinned, repinned_from: null, picked };
}

/** History as the server cuts it: the newest max turns, then no leading tool turns. */
export function cutHistory(turns: readonly Message[], max: number): Message[] {
  if (max <= 0 || turns.length < max) return [...turns];
  let out = turns.slice(turns.length - max);
  while (out.length > 0 && out[0]?.role === "tool") out = out.slice(1);
  return out;
}

function turnOut(t: Message): Message {
  const m: Message = { role: t.role, content: t.content };
  if (t.name) m.name = t.name;
  if (t.tool_call_id) m.tool_call_id = t.tool_call_id;
  if (t.tool_calls !== undefined && t.tool_calls !== null) m.tool_calls = t.tool_calls;
  return m;
}

/** Assembles like POST .../assemble (format plain or openai). */
export function assembleLocal(b: Bundle, req: LocalRequest): AssembledPlain | OpenAIChatBody {
  const format = req.format ?? "plain";
  if (format !== "plain" && format !== "openai" && format !== "") {
    throw new InvalidFieldError(400, "invalid_field", "format must be plain or openai", { field: "format" });
  }
  const maxTurns = req.max_history_turns ?? 0;
  if (maxTurns < 0 || maxTurns > MAX_HISTORY_TURNS_REQUEST) {
    throw new InvalidFieldError(400, "invalid_field", `max_history_turns must be 0..${MAX_HISTORY_TURNS_REQUEST}`, { field: "max_history_turns" });
  }
  const { picked } = resolveLocal(b, req);
  const history = req.session_id ? cutHistory(req.history ?? [], maxTurns || DEFAULT_MAX_HISTORY_TURNS).map(turnOut) : [];
  if (format === "openai") {
    const body = assembleOpenAI(picked, req.variables);
    body.messages.push(...(history as OpenAIChatBody["messages"]));
    return body;
  }
  const out = assemblePlain(picked, req.variables);
  out.messages.push(...history);
  return out;
}

// ADK events as promptd turns: one turn per event, the event itself (with
// its state delta, temp: keys removed) in the turn's metadata, a readable
// text in its content for promptd's console and exports.

import { createEvent, type Event } from "@google/adk";
import type { JSONValue, NewTurn, Turn } from "@promptd/client";

/** The turn metadata key that holds the ADK event. */
export const EVENT_KEY = "adk_event";
/** The turn metadata key of the first turn of a session created with state. */
export const INIT_KEY = "adk_init_state";

/** The event's parts as one line of text. */
function text(e: Event): string {
  const out: string[] = [];
  for (const p of e.content?.parts ?? []) {
    if (typeof p.text === "string") out.push(p.text);
    else if (p.functionCall) out.push(`[call ${p.functionCall.name ?? "?"}]`);
    else if (p.functionResponse) out.push(`[result ${p.functionResponse.name ?? "?"}]`);
  }
  return out.join("\n");
}

/** The JSON form of a value (undefined members dropped, as JSON.stringify does). */
export function toJSON(v: unknown): JSONValue {
  return JSON.parse(JSON.stringify(v ?? null)) as JSONValue;
}

/** The turn that records an event; delta is the event's persisted state delta. */
export function eventTurn(e: Event, delta: Record<string, unknown>): NewTurn {
  const stored = { ...e, actions: { ...e.actions, stateDelta: delta } };
  return {
    role: e.author === "user" ? "user" : "assistant",
    content: text(e),
    ...(e.author && e.author !== "user" ? { name: e.author.slice(0, 64) } : {}),
    metadata: { [EVENT_KEY]: toJSON(stored) },
  };
}

/** The turn that records a created session's initial state. */
export function initTurn(state: Record<string, unknown>): NewTurn {
  return { role: "system", content: "adk session state", metadata: { [INIT_KEY]: toJSON(state) } };
}

/** What a stored turn holds: an event, an initial state, or neither (a turn written by something else). */
export function readTurn(t: Turn): { event?: Event; delta: Record<string, unknown> } {
  const m = t.metadata ?? {};
  const ev = m[EVENT_KEY];
  if (ev && typeof ev === "object" && !Array.isArray(ev)) {
    const e = createEvent(ev);
    return { event: e, delta: e.actions.stateDelta };
  }
  const init = m[INIT_KEY];
  if (init && typeof init === "object" && !Array.isArray(init)) return { delta: init };
  return { delta: {} };
}

// How Agents SDK items live in a promptd session's turns, and how the
// history is read back.
//
// Each item is one turn: a chat message of the closest role (so promptd's
// own history view, assemble and the console read a sensible conversation)
// whose metadata keeps the item exactly as given, under `openai_agents`.
// promptd turns are append-only, so a pop or a clear is a control turn (a
// tombstone) and the history is the replay of the log: a `pop` removes the
// one item it names by seq, a `clear` every item before it. Turns written
// by other promptd clients (no `openai_agents` metadata) are read as the
// equivalent Agents SDK items.

import type { AgentInputItem } from "@openai/agents";
import type { JSONValue, NewTurn, Turn } from "@promptd/client";

/** The metadata key of every turn this package writes. */
export const META_KEY = "openai_agents";

type Marker =
  | { v: 1; kind: "item"; item: AgentInputItem }
  | { v: 1; kind: "pop"; seq: number }
  | { v: 1; kind: "clear" };

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => typeof v === "object" && v !== null && !Array.isArray(v);

/** The text of a message's content: a string as is, text parts joined; null when it has none. */
function textOf(content: unknown): string | null {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return null;
  const texts: string[] = [];
  for (const p of content) {
    if (isRec(p) && typeof p["text"] === "string") texts.push(p["text"]);
    else if (isRec(p) && typeof p["refusal"] === "string") texts.push(p["refusal"]);
  }
  return texts.length > 0 ? texts.join("") : null;
}

function outputText(output: unknown): string {
  if (typeof output === "string") return output;
  return textOf(Array.isArray(output) ? output : [output]) ?? JSON.stringify(output);
}

function marked(turn: Omit<NewTurn, "metadata">, m: Marker): NewTurn {
  return { ...turn, metadata: { [META_KEY]: m as unknown as JSONValue } };
}

/** The turn that stores one item. */
export function itemTurn(item: AgentInputItem): NewTurn {
  const r = item as unknown as Rec;
  const type = typeof r["type"] === "string" ? r["type"] : "message";
  const m: Marker = { v: 1, kind: "item", item };
  if (type === "message") {
    const role = r["role"] === "user" || r["role"] === "assistant" ? r["role"] : "system"; // system, developer
    return marked({ role, content: textOf(r["content"]) }, m);
  }
  if (type === "function_call") {
    const call = { id: String(r["callId"]), type: "function" as const, function: { name: String(r["name"]), arguments: String(r["arguments"]) } };
    return marked({ role: "assistant", content: null, tool_calls: [call] }, m);
  }
  if (type === "function_call_result" && typeof r["callId"] === "string" && r["callId"] !== "") {
    return marked({ role: "tool", content: outputText(r["output"]), tool_call_id: r["callId"], ...(typeof r["name"] === "string" ? { name: r["name"] } : {}) }, m);
  }
  // Reasoning, hosted tool calls and the rest: an assistant turn naming the kind.
  return marked({ role: "assistant", content: `[${type}]` }, m);
}

/** The tombstone that removes the item stored at seq. */
export function popTurn(seq: number): NewTurn {
  return marked({ role: "system", content: `[openai-agents: item ${String(seq)} removed]` }, { v: 1, kind: "pop", seq });
}

/** The tombstone that removes every item before it. */
export function clearTurn(): NewTurn {
  return marked({ role: "system", content: "[openai-agents: history cleared]" }, { v: 1, kind: "clear" });
}

function markerOf(t: Turn): Marker | undefined {
  const m = t.metadata?.[META_KEY];
  if (!isRec(m) || m["v"] !== 1) return undefined;
  if (m["kind"] === "item" && isRec(m["item"])) return { v: 1, kind: "item", item: m["item"] as unknown as AgentInputItem };
  if (m["kind"] === "pop" && typeof m["seq"] === "number") return { v: 1, kind: "pop", seq: m["seq"] };
  if (m["kind"] === "clear") return { v: 1, kind: "clear" };
  return undefined;
}

/** A turn another promptd client wrote, as the equivalent items. */
function foreignItems(t: Turn): AgentInputItem[] {
  const text = textOf(t.content);
  const out: Rec[] = [];
  if (t.role === "user" || t.role === "system") out.push({ type: "message", role: t.role, content: text ?? "" });
  if (t.role === "assistant") {
    if (text !== null) out.push({ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text }] });
    for (const c of t.tool_calls ?? []) {
      const f = (c as unknown as Rec)["function"];
      out.push({
        type: "function_call", callId: c.id, status: "completed",
        name: isRec(f) ? String(f["name"]) : "", arguments: isRec(f) ? String(f["arguments"]) : "",
      });
    }
  }
  if (t.role === "tool") out.push({ type: "function_call_result", callId: t.tool_call_id ?? "", name: t.name ?? "", status: "completed", output: { type: "text", text: text ?? "" } });
  return out as unknown as AgentInputItem[];
}

/** One live item of the history and the seq of the turn that holds it. */
export interface LiveItem {
  seq: number;
  item: AgentInputItem;
}

/**
 * The replayed history: the live items, in order, up to the last turn read
 * (seq) at the session's revision then. Turns are immutable and their seqs
 * contiguous, so the replay goes on from `seq` with the turns after it.
 */
export class History {
  live: LiveItem[] = [];
  seq = 0;
  revision = 0;

  apply(turns: Turn[]): void {
    for (const t of turns) {
      if (t.seq <= this.seq) continue; // already applied
      this.seq = t.seq;
      const m = markerOf(t);
      if (m === undefined) {
        for (const item of foreignItems(t)) this.live.push({ seq: t.seq, item });
      } else if (m.kind === "item") {
        this.live.push({ seq: t.seq, item: m.item });
      } else if (m.kind === "pop") {
        const i = this.live.findLastIndex((l) => l.seq === m.seq);
        if (i >= 0) this.live.splice(i, 1);
      } else {
        this.live = [];
      }
    }
  }
}

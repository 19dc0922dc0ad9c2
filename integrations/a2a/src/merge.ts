// The three-way merge a save runs when another replica wrote the task since
// this replica read it: what this replica changed (base -> ours) is laid over
// what is on the board now (theirs), so neither write is lost. It works on
// the tasks' JSON form (the SDK's Task.toJSON).

type Obj = Record<string, unknown>;

/** JSON text with sorted keys: equal values give equal text whatever the key order. */
export function canon(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) => {
    if (x === null || typeof x !== "object" || Array.isArray(x)) return x;
    const o = x as Obj;
    return Object.fromEntries(Object.keys(o).sort().map((k) => [k, o[k]]));
  });
}

const same = (a: unknown, b: unknown): boolean => canon(a) === canon(b);
const list = (v: unknown): Obj[] => (Array.isArray(v) ? (v as Obj[]) : []);
const obj = (v: unknown): Obj => (v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Obj) : {});

/**
 * ours over theirs, relative to base (the task as this replica last read it;
 * undefined when it never read one). Status: ours when ours changed it, else
 * theirs. History: theirs, then the messages ours added (by messageId). Artifacts
 * (by artifactId): the ones ours changed replace theirs, and when both appended
 * parts to one artifact both appends are kept. Metadata: key by key, the keys
 * ours changed.
 */
export function mergeTask(base: Obj | undefined, ours: Obj, theirs: Obj): Obj {
  const b = base ?? {};
  const out: Obj = { ...theirs, id: ours["id"], contextId: ours["contextId"] ?? theirs["contextId"] };
  out["status"] = same(ours["status"], b["status"]) ? theirs["status"] : ours["status"];
  out["history"] = mergeHistory(list(b["history"]), list(ours["history"]), list(theirs["history"]));
  out["artifacts"] = mergeArtifacts(list(b["artifacts"]), list(ours["artifacts"]), list(theirs["artifacts"]));
  const meta = mergeMetadata(obj(b["metadata"]), obj(ours["metadata"]), obj(theirs["metadata"]));
  if (Object.keys(meta).length > 0 || theirs["metadata"] !== undefined) out["metadata"] = meta;
  return out;
}

const msgKey = (m: Obj): string => (typeof m["messageId"] === "string" && m["messageId"] !== "" ? m["messageId"] : canon(m));

function mergeHistory(base: Obj[], ours: Obj[], theirs: Obj[]): Obj[] {
  const seen = new Set([...theirs.map(msgKey), ...base.map(msgKey)]);
  return [...theirs, ...ours.filter((m) => !seen.has(msgKey(m)))];
}

const artKey = (a: Obj): string => (typeof a["artifactId"] === "string" ? a["artifactId"] : canon(a));

function mergeArtifacts(base: Obj[], ours: Obj[], theirs: Obj[]): Obj[] {
  const out = [...theirs];
  for (const a of ours) {
    const k = artKey(a);
    const b = base.find((x) => artKey(x) === k);
    if (b !== undefined && same(a, b)) continue; // ours did not touch it
    const i = out.findIndex((x) => artKey(x) === k);
    if (i < 0) { out.push(a); continue; }
    const t = out[i]!;
    if (b === undefined || same(t, b)) { out[i] = a; continue; }
    // both changed it: keep both appends when both only appended parts
    const bp = list(b["parts"]), ap = list(a["parts"]), tp = list(t["parts"]);
    const extends_ = (p: Obj[]): boolean => p.length >= bp.length && same(p.slice(0, bp.length), bp);
    out[i] = extends_(ap) && extends_(tp) ? { ...a, parts: [...tp, ...ap.slice(bp.length)] } : a;
  }
  return out;
}

function mergeMetadata(base: Obj, ours: Obj, theirs: Obj): Obj {
  const out = new Map(Object.entries(theirs));
  for (const k of new Set([...Object.keys(base), ...Object.keys(ours)])) {
    if (same(ours[k], base[k])) continue;
    if (ours[k] === undefined) out.delete(k);
    else out.set(k, ours[k]);
  }
  return Object.fromEntries(out);
}

// The SDK's wire types (src/types.ts) against the HTTP contract, api/openapi.yaml.
//
// MIRRORS names, for every type src/types.ts exports (and for some of their
// inline members: "PromptConfig.variables{}" is a value of that record,
// "PromptConfig.skills[]" an element of that array), the schema or schemas it
// mirrors. Its members, read with the TypeScript compiler (inherited ones
// included), must be that schema's properties by name; a member is optional
// (`?`) exactly when the schema does not require it, and `| null` exactly when
// the schema lets it be null (members typed unknown, any or a type parameter
// say nothing about null and are not checked for it). What differs on purpose
// is listed beside the type with the reason; an exception that no longer
// applies fails too. $ref, allOf (members of every part) and oneOf/anyOf
// (members of any branch, required in all) are resolved. No promptd needed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { load } from "js-yaml";
import { repoRoot } from "./harness.js";
import { listItemMembers, membersOf as declaredMembersOf, type DeclaredMember } from "./declared.js";

interface Mirror {
  /** Pointers under #/components/schemas ("Env", "StateEntries/additionalProperties"), or from the document's root ("#/paths/..."). */
  schemas: string[];
  /** Members that are not on the wire -> why. */
  clientOnly?: Record<string, string>;
  /** Schema properties the type leaves out -> why. */
  notCarried?: Record<string, string>;
  /** Members whose `?` differs from the schema's required -> why. */
  optional?: Record<string, string>;
  /** Members whose `| null` differs from the schema's -> why. */
  nullable?: Record<string, string>;
}

/** An export that is not a wire object: why it has no schema to check. */
interface NotAShape {
  notAShape: string;
}

// GET /v1/intents answers an inline schema (a pointer from the document's root).
const LIST_INTENTS = "#/paths/~1v1~1intents/get/responses/200/content/application~1json/schema";
// What List<T> is used for (client.ts's list methods; listClientMethods_answerTheirRoutesItems checks their items).
const LISTS = ["VersionList", "ReleaseList", "SessionList", "RecordList", LIST_INTENTS, "FragmentVersionList", "FragmentList", "FragmentUseList"];
const MODEL_KEYS = "the config's pass-through model keys (ModelSettings keeps any), typed for convenience";

/** ModelConfig's named members; ModelSettings' other request fields pass through its index signature. */
const MODEL_NAMED = new Set(["name", "temperature", "top_p", "max_completion_tokens", "extra"]);
function modelPassThrough(): Record<string, string> {
  const schemas = (loadSpec()["components"] as Node)["schemas"] as Node;
  const props = Object.keys((schemas["ModelSettings"] as Node)["properties"] ?? {});
  return Object.fromEntries(props.filter((k) => !MODEL_NAMED.has(k))
    .map((k) => [k, "a request field of ModelSettings the type passes through its index signature instead of naming it"]));
}

const MIRRORS: Record<string, Mirror | NotAShape> = {
  JSONValue: { notAShape: "any JSON value" },
  FunctionTool: {
    schemas: ["Tool"],
    optional: { function: "a function tool has its function; Tool also admits other tool types, without one" },
  },
  "FunctionTool.function": { schemas: ["FunctionDefinition"] },
  ModelConfig: { schemas: ["ModelSettings"], notCarried: modelPassThrough() },
  PromptConfig: { schemas: ["PromptConfig"] },
  "PromptConfig.skills[]": { schemas: ["Skill"] },
  "PromptConfig.messages[]": { schemas: ["TemplateMessage"] },
  TemplateMessage: { schemas: ["TemplateMessage"] },
  FragmentMessage: { schemas: ["FragmentMessage"] },
  FragmentRef: { schemas: ["FragmentRef"] },
  "PromptConfig.fragments{}": { schemas: ["FragmentRef"] },
  FragmentContent: { schemas: ["FragmentContent"] },
  FragmentProposal: { schemas: ["FragmentVersion/properties/proposal/items"] },
  FragmentVersion: { schemas: ["FragmentVersion"] },
  "FragmentVersion.variables{}": { schemas: ["VariableSpec"] },
  "FragmentVersion.fragments{}": { schemas: ["FragmentRef"] },
  FragmentSummary: { schemas: ["FragmentSummary"] },
  FragmentEnv: { schemas: ["FragmentEnv"] },
  FragmentUse: { schemas: ["FragmentUse"] },
  FragmentVersionInput: { notAShape: "the client's options for a fragment create (camelCase); client.createFragmentVersion sends CreateFragmentRequest" },
  "PromptConfig.variables{}": { schemas: ["VariableSpec"] },
  VariableSpec: { schemas: ["VariableSpec"] },
  VariableType: { notAShape: "VariableSpec.type's values" },
  VariableValue: { notAShape: "a value for a variable (AssembleRequest.variables)" },
  Version: { schemas: ["Version"] },
  VersionMerge: { schemas: ["VersionMerge"] },
  List: { schemas: LISTS },
  Release: { schemas: ["Release"] },
  Env: { schemas: ["Env"] },
  ReleaseTrace: { schemas: ["Trace"] },
  Resolved: { schemas: ["Prompt"] },
  Caller: { notAShape: "the client's options (userId, sessionId); sent as user_id and session_id" },
  ToolCall: { schemas: ["ToolCall"] },
  "ToolCall.function": { schemas: ["ToolCall/properties/function"] },
  Message: { schemas: ["Message"] },
  AssembledPlain: { schemas: ["Assembled"] },
  OpenAIMessage: { schemas: ["OpenAIChatRequest/properties/messages/items"] },
  OpenAIChatBody: {
    schemas: ["OpenAIChatRequest"],
    clientOnly: Object.fromEntries(
      ["temperature", "top_p", "max_completion_tokens", "frequency_penalty", "presence_penalty", "seed", "stop",
        "parallel_tool_calls"].map((k) => [k, MODEL_KEYS + " (at the top level: OpenAIChatRequest keeps any)"]),
    ),
  },
  AssembleRequest: { notAShape: "the client's options for assemble (camelCase); client.assemble sends AssembleRequest" },
  // GET answers the detail; create and close answer the session alone.
  Session: { schemas: ["SessionDetail", "Session"] },
  SessionSummary: { schemas: ["SessionSummary"] },
  "SessionSummary.lease": { schemas: ["LeaseInfo"] },
  "Session.lease": { schemas: ["LeaseInfo"] },
  NewTurn: { schemas: ["TurnInput"] },
  Turn: { schemas: ["Turn"] },
  StateEntry: { schemas: ["StateEntries/additionalProperties"] },
  Lease: { schemas: ["SessionLease"] },
  GenericLease: { schemas: ["Leases"] },
  Event: { schemas: ["FeedEvent"] },
  BundleRelease: { schemas: ["BundleEnv/properties/release"] },
  "BundleRelease.overrides": { schemas: ["OverrideHashes"] },
  BundleEnv: { schemas: ["BundleEnv"] },
  Bundle: { schemas: ["Bundle"], optional: { format: "a bundle of a server before fragments has none (format 1), and the evaluators read those too" } },
  "Bundle.agents{}": { schemas: ["BundleAgent"] },
  "Bundle.agents{}.versions{}": { schemas: ["BundleAgent/properties/versions/additionalProperties"] },
  ExposureItem: { schemas: ["ExposureReport/properties/items/items"] },
  BoardRecord: { schemas: ["Record"] },
  Board: { schemas: ["Board"] },
  BoardClaimRule: { schemas: ["Board/properties/claim"] },
  "Board.quota": { schemas: ["BoardQuota"] },
  IntentRecordScope: { schemas: ["IntentScope/properties/records/items"] },
  IntentScope: { schemas: ["IntentScope"] },
  IntentRef: { schemas: ["IntentRef"] },
  Intent: { schemas: ["Intent"] },
  RegisteredIntent: { schemas: ["RegisteredIntent"] },
  BoardBatchItem: { schemas: ["BoardBatchItem"] },
  MergeConflictPath: { schemas: ["MergeConflictPath"] },
  BoardBatchConflict: { schemas: ["BoardBatchItemResult/properties/conflict"] },
  BoardBatchItemResult: { schemas: ["BoardBatchItemResult"] },
  BoardBatchSummary: { schemas: ["BoardBatchSummary"] },
  BoardBatch: { schemas: ["BoardBatch"] },
};

// ---- the contract's side

type Node = Record<string, unknown>;

function loadSpec(): Node {
  return load(readFileSync(join(repoRoot, "api", "openapi.yaml"), "utf8")) as Node;
}

function pointer(spec: Node, ref: string): unknown {
  let node: unknown = spec;
  for (const part of ref.replace(/^#\//, "").split("/")) {
    node = (node as Record<string, unknown>)[part.replace(/~1/g, "/").replace(/~0/g, "~")];
    if (node === undefined) throw new Error(`${ref}: no ${part}`);
  }
  return node;
}

function deref(spec: Node, node: unknown): Node {
  let n = node as Node;
  while (typeof n["$ref"] === "string") n = pointer(spec, n["$ref"]) as Node;
  return n;
}

const isNull = (n: Node): boolean => n["type"] === "null";
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

interface Shape {
  props: Map<string, Node[]>; // name -> its schema in each part or branch that has it
  required: Set<string>;
}

/** The members of an object schema: its own, every allOf part's, and oneOf/anyOf's
 * (a member of any branch, required when every branch requires it); a null branch
 * is left out (it makes the object nullable, not smaller). */
function shape(spec: Node, node: unknown): Shape {
  const n = deref(spec, node);
  const out: Shape = { props: new Map(), required: new Set(list(n["required"]) as string[]) };
  const add = (s: Shape): void => {
    for (const [k, v] of s.props) out.props.set(k, [...(out.props.get(k) ?? []), ...v]);
  };
  add({ props: new Map(Object.entries((n["properties"] ?? {}) as Record<string, Node>).map(([k, v]) => [k, [v]])), required: new Set() });
  for (const part of list(n["allOf"])) {
    const s = shape(spec, part);
    add(s);
    for (const r of s.required) out.required.add(r);
  }
  const branches = [...list(n["oneOf"]), ...list(n["anyOf"])].filter((b) => !isNull(deref(spec, b))).map((b) => shape(spec, b));
  for (const s of branches) add(s);
  const [first, ...rest] = branches;
  if (first) for (const r of first.required) if (rest.every((s) => s.required.has(r))) out.required.add(r);
  return out;
}

const CONSTRAINTS = ["type", "enum", "const", "oneOf", "anyOf", "allOf", "properties", "items", "$ref", "not"];

/** Whether a value of this schema may be JSON null. */
function nullable(spec: Node, node: unknown): boolean {
  const n = deref(spec, node);
  if (!CONSTRAINTS.some((k) => k in n)) return true; // any JSON ({} or a description only)
  const t = n["type"];
  if (t === "null" || (Array.isArray(t) && t.includes("null"))) return true;
  if (list(n["enum"]).includes(null)) return true;
  if ([...list(n["oneOf"]), ...list(n["anyOf"])].some((b) => nullable(spec, b))) return true;
  const parts = list(n["allOf"]);
  return parts.length > 0 && !("type" in n) && parts.every((p) => nullable(spec, p));
}

// ---- the SDK's side

type Member = DeclaredMember;

const SDK = join(repoRoot, "sdk", "typescript");
const TYPES_TS = join(SDK, "src", "types.ts");

/** The members of every export of types.ts and of the inline paths asked for;
 * `source` replaces the file's text (the controls' drifted copies). */
function readTypes(paths: string[], source?: string): { exports: string[]; members: Map<string, Map<string, Member>> } {
  const cfg = ts.readConfigFile(join(SDK, "tsconfig.json"), (f) => ts.sys.readFile(f));
  const options = ts.parseJsonConfigFileContent(cfg.config, ts.sys, SDK).options;
  const host = ts.createCompilerHost(options);
  if (source !== undefined) {
    const getSourceFile = host.getSourceFile.bind(host);
    host.getSourceFile = (f, lang, ...rest) =>
      f === TYPES_TS ? ts.createSourceFile(f, source, lang) : getSourceFile(f, lang, ...rest);
  }
  const program = ts.createProgram([TYPES_TS], { ...options, noEmit: true }, host);
  const checker = program.getTypeChecker();
  const file = program.getSourceFile(TYPES_TS);
  const mod = file && checker.getSymbolAtLocation(file);
  if (!mod) throw new Error(`${TYPES_TS}: not read`);
  const declared = new Map(checker.getExportsOfModule(mod).map((s) => [s.name, checker.getDeclaredTypeOfSymbol(s)]));

  const membersOf = (type: ts.Type): Map<string, Member> => declaredMembersOf(checker, type);

  const typeAt = (path: string): ts.Type => {
    const [, root = "", rest = ""] = /^(\w+)(.*)$/.exec(path) ?? [];
    let t = declared.get(root);
    for (const [step, name] of rest.matchAll(/\.(\w+)|\[\]|\{\}/g)) {
      if (!t) break;
      t = checker.getNonNullableType(t);
      if (name !== undefined) {
        const p = checker.getPropertyOfType(t, name);
        t = p && checker.getNonNullableType(checker.getTypeOfSymbol(p));
      } else {
        t = checker.getIndexTypeOfType(t, step === "[]" ? ts.IndexKind.Number : ts.IndexKind.String);
      }
    }
    if (!t) throw new Error(`${path}: no such type in src/types.ts`);
    return t;
  };

  const members = new Map<string, Map<string, Member>>();
  for (const path of paths) members.set(path, membersOf(typeAt(path)));
  return { exports: [...declared.keys()], members };
}

// ---- the check

/** What differs between a type's members and the schemas it mirrors (besides the
 * listed exceptions), and each listed exception that no longer applies. */
function drift(name: string, members: Map<string, Member>, mirror: Mirror, spec: Node): string[] {
  const where = mirror.schemas.join(", ");
  const shapes = mirror.schemas.map((s) => shape(spec, pointer(spec, s.startsWith("#/") ? s : "#/components/schemas/" + s)));
  const props = new Map<string, Node[]>();
  for (const s of shapes) for (const [k, v] of s.props) props.set(k, [...(props.get(k) ?? []), ...v]);
  const required = new Set([...props.keys()].filter((k) => shapes.every((s) => s.required.has(k))));
  const clientOnly = mirror.clientOnly ?? {};
  const notCarried = mirror.notCarried ?? {};
  const out: string[] = [];
  for (const k of Object.keys(clientOnly)) {
    if (!members.has(k) || props.has(k)) out.push(`${name}: client-only ${k} is ${props.has(k) ? "on the wire" : "no member"}: drop the exception`);
  }
  for (const k of Object.keys(notCarried)) {
    if (!props.has(k) || members.has(k)) out.push(`${name}: not-carried ${k} is ${members.has(k) ? "a member" : "not in " + where}: drop the exception`);
  }
  const wire = [...members.keys()].filter((k) => !(k in clientOnly)).sort();
  for (const k of [...props.keys()].sort()) {
    if (!members.has(k) && !(k in notCarried)) out.push(`${name}: ${where} has ${k}, the type has no such member`);
  }
  for (const k of wire) if (!props.has(k)) out.push(`${name}: member ${k} is not a property of ${where}`);
  const agree = (what: string, k: string, sdk: boolean, schema: boolean, exceptions: Record<string, string> | undefined, differ: string): void => {
    const excepted = exceptions !== undefined && k in exceptions;
    if ((sdk !== schema) === excepted) return;
    out.push(excepted ? `${name}.${k}: ${what} agrees with ${where} now: drop the exception` : `${name}.${k}: ${differ}`);
  };
  for (const k of wire) {
    const m = members.get(k);
    const ps = props.get(k);
    if (!m || !ps) continue;
    const req = required.has(k);
    agree("?", k, m.optional, !req, mirror.optional, req ? `${where} requires it, the type has it optional (?)` : `${where} does not require it, the type does (add ?)`);
    if (m.nullable === undefined) continue;
    const schemaNull = ps.some((p) => nullable(spec, p));
    agree("| null", k, m.nullable, schemaNull, mirror.nullable, schemaNull ? `${where} lets it be null, the type does not (add | null)` : `${where} never has it null, the type does (drop | null)`);
  }
  for (const [what, exceptions] of [["optional", mirror.optional], ["nullable", mirror.nullable]] as const) {
    for (const k of Object.keys(exceptions ?? {})) if (!members.has(k) || !props.has(k)) out.push(`${name}: ${what} exception ${k} names no member of both: drop it`);
  }
  return out;
}

const isShape = (m: Mirror | NotAShape): m is Mirror => "schemas" in m;
const shapes = Object.entries(MIRRORS).filter((e): e is [string, Mirror] => isShape(e[1]));
const spec = loadSpec();
const sdk = readTypes(shapes.map(([k]) => k));
const membersOf = (path: string): Map<string, Member> => {
  const m = sdk.members.get(path);
  if (!m) throw new Error(`${path}: not read`);
  return m;
};

for (const [name, mirror] of shapes) {
  test(`types_${name}_matchesItsSchema`, () => {
    assert.deepEqual(drift(name, membersOf(name), mirror, spec), []);
  });
}

test("types_everyExportOfTypesTs_isInTheTable", () => {
  assert.deepEqual(sdk.exports.filter((e) => !(e in MIRRORS)), []);
  assert.ok(sdk.exports.length >= 25, `only ${sdk.exports.length} exports read from src/types.ts`);
});

// Every list method of Client is named by its route's operationId; the items of
// its declared answer (read from src/client.ts) must mirror the items of the
// schema that route answers (200), as the types above mirror theirs.
function listRoutes(): Map<string, string> {
  const out = new Map<string, string>();
  for (const [path, item] of Object.entries(spec["paths"] as Record<string, Node>)) {
    const get = item["get"] as Node | undefined;
    const id = get?.["operationId"];
    if (typeof id !== "string" || !id.startsWith("list")) continue;
    const responses = get?.["responses"] as Record<string, Node>;
    const ok = deref(spec, responses["200"]);
    const body = deref(spec, ((ok["content"] as Record<string, Node>)["application/json"] as Node)["schema"]);
    const items = ((body["properties"] as Record<string, Node>)["items"] as Node)["items"] as Node;
    const ref = items["$ref"];
    out.set(id, typeof ref === "string" ? ref : `${path}: list items without a $ref`);
  }
  return out;
}

test("listClientMethods_answerTheirRoutesItems", () => {
  const routes = listRoutes();
  const methods = listItemMembers();
  assert.ok(methods.size >= 5, `only ${methods.size} list methods read from src/client.ts`);
  const out: string[] = [];
  for (const [method, members] of methods) {
    const ref = routes.get(method);
    if (ref === undefined) { out.push(`Client.${method}: no GET route has operationId ${method}`); continue; }
    out.push(...drift(`Client.${method} items`, members, { schemas: [ref] }, spec));
  }
  assert.deepEqual(out, []);
});

// Controls: the check is able to fail.
const VERSION = MIRRORS["Version"] as Mirror;

test("drift_renamedSchemaProperty_isReported", () => {
  const drifted = structuredClone(spec);
  const v = pointer(drifted, "#/components/schemas/Version") as { properties: Record<string, unknown>; required: string[] };
  v.properties["author"] = v.properties["created_by"];
  delete v.properties["created_by"];
  v.required = v.required.map((r) => (r === "created_by" ? "author" : r));
  assert.deepEqual(drift("Version", membersOf("Version"), VERSION, drifted), [
    "Version: Version has author, the type has no such member",
    "Version: member created_by is not a property of Version",
  ]);
});

test("drift_typeWithAnExtraOrLooserMember_isReported", () => {
  const source = readFileSync(TYPES_TS, "utf8");
  const before = "  content_hash: string;\n  message: string;\n  created_by: string;\n";
  assert.ok(source.includes(before), "the Version interface of src/types.ts changed: update this control");
  const drifted = source.replace(before, "  content_hash: string;\n  message?: string;\n  created_by: string | null;\n  author: string;\n");
  const members = readTypes(["Version"], drifted).members.get("Version") ?? new Map<string, Member>();
  assert.deepEqual(drift("Version", members, VERSION, spec), [
    "Version: member author is not a property of Version",
    "Version.created_by: Version never has it null, the type does (drop | null)",
    "Version.message: Version requires it, the type has it optional (?)",
  ]);
});

test("drift_staleException_isReported", () => {
  const stale: Mirror = { schemas: ["Version"], notCarried: { created_by: "x" }, optional: { message: "y" } };
  assert.deepEqual(drift("Version", membersOf("Version"), stale, spec), [
    "Version: not-carried created_by is a member: drop the exception",
    "Version.message: ? agrees with Version now: drop the exception",
  ]);
});

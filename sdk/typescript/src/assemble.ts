// Local rendering and assembly with exactly the server's rules
// (promptstore/template.go, assemble.go; api/openapi.yaml, Resolving and assembling).
// Placeholders are ASCII, so scanning UTF-16 strings finds exactly what the
// server finds scanning UTF-8 bytes.

import { InvalidConfigError, InvalidVariableError, MissingVariableError } from "./errors.js";
import { AskServer } from "./evaluate.js";
import type { AssembledPlain, Bundle, FragmentRef, Message, OpenAIChatBody, OpenAIMessage, PromptConfig, ReleaseTrace, VariableSpec } from "./types.js";

const isNameStart = (c: number): boolean => c === 95 || (c >= 97 && c <= 122) || (c >= 65 && c <= 90);
const isDigit = (c: number): boolean => c >= 48 && c <= 57;
const isBlank = (c: number): boolean => c === 32 || c === 9;

/** The placeholder at s[i] ("{{" there): its name and the index after it. */
function placeholderAt(s: string, i: number): { name: string; end: number } | undefined {
  let j = i + 2;
  while (j < s.length && isBlank(s.charCodeAt(j))) j++;
  const start = j;
  while (j < s.length && (isNameStart(s.charCodeAt(j)) || (j > start && isDigit(s.charCodeAt(j))))) j++;
  if (j === start) return undefined;
  const name = s.slice(start, j);
  while (j < s.length && isBlank(s.charCodeAt(j))) j++;
  if (!s.startsWith("}}", j)) return undefined;
  return { name, end: j + 2 };
}

/** The fragment include {{> alias}} at s[i] ("{{" there): its alias and the index after it. */
function partialAt(s: string, i: number): { alias: string; end: number } | undefined {
  let j = i + 2;
  while (j < s.length && isBlank(s.charCodeAt(j))) j++;
  if (s.charCodeAt(j) !== 62) return undefined; // ">"
  j++;
  while (j < s.length && isBlank(s.charCodeAt(j))) j++;
  const start = j;
  while (j < s.length && (isNameStart(s.charCodeAt(j)) || (j > start && isDigit(s.charCodeAt(j))))) j++;
  if (j === start) return undefined;
  const alias = s.slice(start, j);
  while (j < s.length && isBlank(s.charCodeAt(j))) j++;
  if (!s.startsWith("}}", j)) return undefined;
  return { alias, end: j + 2 };
}

/** Fragments nest at most this deep (a config's own are at depth 1). */
export const MAX_FRAGMENT_DEPTH = 4;

/** Bundle formats this evaluator answers from: absent (1), 1, and 2 (configs may pin fragments). */
export const BUNDLE_FORMATS: readonly number[] = [1, 2];

/**
 * Throws AskServer("format_unknown") for a bundle of a format this
 * evaluator does not know: its configs may mean what it cannot render,
 * so the server answers. LocalPrompts checks it before every local answer.
 */
export function checkBundleFormat(bundle: Bundle): void {
  const f = bundle.format ?? 1;
  if (!BUNDLE_FORMATS.includes(f)) throw new AskServer("format_unknown");
}

/**
 * One-pass substitution: a substituted value is never expanded again; a bad "{{" is literal.
 * With fragments (a config's pinned ones), {{> alias}} of a text fragment is its text rendered
 * with the same variables and its own fragments; an alias they lack is literal text.
 */
export function render(s: string, vars: Readonly<Record<string, string>>, fragments?: Readonly<Record<string, FragmentRef>>, depth = 0): string {
  if (!s.includes("{{")) return s;
  let out = "";
  let i = 0;
  while (i < s.length) {
    const k = s.indexOf("{{", i);
    if (k < 0) {
      out += s.slice(i);
      break;
    }
    out += s.slice(i, k);
    i = k;
    const p = placeholderAt(s, i);
    if (p) {
      out += Object.prototype.hasOwnProperty.call(vars, p.name) ? (vars[p.name] ?? "") : "";
      i = p.end;
      continue;
    }
    if (fragments) {
      const inc = partialAt(s, i);
      const f = inc && Object.prototype.hasOwnProperty.call(fragments, inc.alias) ? fragments[inc.alias] : undefined;
      if (inc && f && typeof f.text === "string" && depth < MAX_FRAGMENT_DEPTH) {
        out += render(f.text, vars, f.fragments ?? {}, depth + 1);
        i = inc.end;
        continue;
      }
    }
    out += "{";
    i++;
  }
  return out;
}

/** Limits on a value, as the server's. */
const MAX_LIST_ITEMS = 1024;

/** What a value of the declaration's type is, for errors. */
function expected(decl: VariableSpec): string {
  switch (decl.type) {
    case "number": return "a number";
    case "boolean": return "true or false";
    case "enum": return "one of " + (decl.values ?? []).join(", ");
    case "string_list": return `a list of at most ${MAX_LIST_ITEMS} strings`;
    default: return "a string";
  }
}

/**
 * A value's text in a template, as the server writes it: a number as
 * ECMAScript's Number::toString (String(n)), a boolean as true/false, an
 * enum as its value, a string list joined by ", ". undefined: not of the
 * declaration's type.
 */
export function renderValue(decl: VariableSpec, v: unknown): string | undefined {
  switch (decl.type) {
    case "number":
      return typeof v === "number" && Number.isFinite(v) ? String(v) : undefined;
    case "boolean":
      return typeof v === "boolean" ? String(v) : undefined;
    case "string_list":
      if (!Array.isArray(v) || v.length > MAX_LIST_ITEMS || !v.every((x) => typeof x === "string")) return undefined;
      return v.join(", ");
    case "enum":
      return typeof v === "string" && (decl.values ?? []).includes(v) ? v : undefined;
    default:
      return typeof v === "string" ? v : undefined;
  }
}

/**
 * Binds assemble-time variables: each value of its variable's type (a
 * string when untyped), required ones present, defaults filled, extras
 * ignored; each rendered as its template text.
 */
export function bind(cfg: PromptConfig, given: Readonly<Record<string, unknown>> = {}): Record<string, string> {
  const out: Record<string, string> = {};
  const names = Object.keys(cfg.variables ?? {}).sort();
  for (const name of names) {
    const decl: VariableSpec = cfg.variables?.[name] ?? {};
    const v = Object.prototype.hasOwnProperty.call(given, name) ? given[name] : undefined;
    if (v !== undefined && v !== null) {
      const s = renderValue(decl, v);
      if (s === undefined) {
        throw new InvalidVariableError(422, "invalid_variable", `variable ${name} must be ${expected(decl)}`, { variable: name, field: `variables.${name}` });
      }
      out[name] = s;
    } else if (decl.default !== undefined && decl.default !== null) {
      const s = renderValue(decl, decl.default);
      if (s === undefined) {
        throw new InvalidVariableError(422, "invalid_variable", `variable ${name}'s default is not ${expected(decl)}`, { variable: name, field: `variables.${name}` });
      }
      out[name] = s;
    } else if (decl.required) {
      throw new MissingVariableError(422, "missing_variable", `required variable ${name} is missing`, { variable: name, field: `variables.${name}` });
    }
  }
  return out;
}

/** The system message, byte for byte. */
export function systemMessage(cfg: PromptConfig, vars: Readonly<Record<string, string>>): string {
  const frags = cfg.fragments;
  let b = render(cfg.system, vars, frags);
  if (cfg.skills && cfg.skills.length > 0) {
    b += "\n\n# Skills";
    for (const s of cfg.skills) b += "\n\n## " + s.name + "\n" + render(s.instructions ?? "", vars, frags);
  }
  if (cfg.memory && cfg.memory.length > 0) {
    b += "\n\n# Memory";
    for (const m of cfg.memory) b += "\n- " + render(m, vars, frags);
  }
  return b;
}

/**
 * The system message, then the config's rendered messages (no session turns); an entry
 * {fragment: alias} is replaced by that messages fragment's messages, each rendered.
 */
export function messages(cfg: PromptConfig, vars: Readonly<Record<string, string>>): Message[] {
  const out: Message[] = [{ role: "system", content: systemMessage(cfg, vars) }];
  const frags = cfg.fragments ?? {};
  for (const m of cfg.messages ?? []) {
    if (m.fragment !== undefined) {
      const f = Object.prototype.hasOwnProperty.call(frags, m.fragment) ? frags[m.fragment] : undefined;
      for (const fm of f?.messages ?? []) out.push({ role: fm.role, content: render(fm.content, vars, f?.fragments ?? {}) });
      continue;
    }
    out.push({ role: m.role ?? "user", content: render(m.content ?? "", vars, cfg.fragments) });
  }
  return out;
}

export interface Picked {
  version: number;
  content_hash: string;
  config: PromptConfig;
  release: ReleaseTrace | null;
  pinned: boolean;
}

export function assemblePlain(p: Picked, variables?: Readonly<Record<string, unknown>>): AssembledPlain {
  const vars = bind(p.config, variables);
  return {
    version: p.version,
    content_hash: p.content_hash,
    messages: messages(p.config, vars),
    tools: p.config.tools ?? [],
    model: p.config.model ?? null,
    release: p.release,
    pinned: p.pinned,
  };
}

export function assembleOpenAI(p: Picked, variables?: Readonly<Record<string, unknown>>): OpenAIChatBody {
  const vars = bind(p.config, variables);
  const model = p.config.model;
  if (!model || typeof model.name !== "string" || model.name === "") {
    throw new InvalidConfigError(422, "invalid_config", "format=openai needs the config's model.name", { field: "config.model.name" });
  }
  for (const k of ["model", "messages", "tools", "stream"]) {
    if (Object.prototype.hasOwnProperty.call(model, k)) {
      throw new InvalidConfigError(422, "invalid_config", `model may not set ${k} in the openai format`, { field: `config.model.${k}` });
    }
  }
  // {"model": name, the other model keys sorted, "messages", "tools"?}: the server's key order.
  // model.extra holds a provider's own keys: they go to the top level,
  // sorted with the others; one that is reserved or repeats a key set
  // beside it is refused, as the server does.
  const keys: Record<string, unknown> = {};
  for (const k of Object.keys(model)) if (k !== "name" && k !== "extra") keys[k] = model[k];
  if (Object.prototype.hasOwnProperty.call(model, "extra")) {
    const extra: unknown = model.extra;
    if (typeof extra !== "object" || extra === null || Array.isArray(extra)) {
      throw new InvalidConfigError(422, "invalid_config", "model.extra must be an object", { field: "config.model.extra" });
    }
    for (const k of Object.keys(extra).sort()) {
      if (["model", "messages", "tools", "stream", "name", "extra"].includes(k)) {
        throw new InvalidConfigError(422, "invalid_config", `model.extra may not set ${k}: promptd assembles it`, { field: `config.model.extra.${k}` });
      }
      if (Object.prototype.hasOwnProperty.call(model, k)) {
        throw new InvalidConfigError(422, "invalid_config", `model.extra.${k} would shadow model.${k}: set it once`, { field: `config.model.extra.${k}` });
      }
      keys[k] = (extra as Record<string, unknown>)[k];
    }
  }
  const body = { model: model.name } as OpenAIChatBody & Record<string, unknown>;
  for (const k of Object.keys(keys).sort()) body[k] = keys[k];
  body.messages = messages(p.config, vars).map((m): OpenAIMessage => ({ role: m.role, content: m.content }) as OpenAIMessage);
  if (p.config.tools && p.config.tools.length > 0) body.tools = p.config.tools;
  return body;
}

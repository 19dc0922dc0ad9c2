// What the SDK declares, read with the TypeScript compiler: for every method of
// Client named list*, the members of its answer's items (Promise<{ items: X[] }>
// -> the members of X, inherited ones included). Shared by openapi-types.test.ts
// (against api/openapi.yaml) and lists.test.ts (against a real promptd's answers).
import { join } from "node:path";
import ts from "typescript";
import { repoRoot } from "./harness.js";

export interface DeclaredMember {
  optional: boolean;
  /** undefined: typed unknown, any or a type parameter (nothing said about null). */
  nullable: boolean | undefined;
}

const SDK = join(repoRoot, "sdk", "typescript");
const CLIENT_TS = join(SDK, "src", "client.ts");

/** The named members of a type (a union: of any part; optional unless in every part). */
export function membersOf(checker: ts.TypeChecker, type: ts.Type): Map<string, DeclaredMember> {
  const t = checker.getNonNullableType(type);
  const parts = t.isUnion() ? t.types : [t];
  const out = new Map<string, DeclaredMember>();
  for (const part of parts) {
    for (const p of checker.getPropertiesOfType(part)) {
      const pt = checker.getTypeOfSymbol(p);
      const untyped = (pt.flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown | ts.TypeFlags.TypeParameter)) !== 0;
      const m: DeclaredMember = {
        optional: (p.flags & ts.SymbolFlags.Optional) !== 0,
        nullable: untyped ? undefined : (pt.isUnion() ? pt.types : [pt]).some((x) => (x.flags & ts.TypeFlags.Null) !== 0),
      };
      const seen = out.get(p.name);
      out.set(p.name, seen ? { optional: seen.optional || m.optional, nullable: m.nullable === undefined ? seen.nullable : (seen.nullable ?? false) || m.nullable } : m);
    }
  }
  for (const [k, m] of out) if (!parts.every((part) => checker.getPropertyOfType(part, k))) m.optional = true;
  return out;
}

let cached: Map<string, Map<string, DeclaredMember>> | undefined;

/** Client's list* methods -> the members of their answer's items. */
export function listItemMembers(): Map<string, Map<string, DeclaredMember>> {
  if (cached) return cached;
  const cfg = ts.readConfigFile(join(SDK, "tsconfig.json"), (f) => ts.sys.readFile(f));
  const options = ts.parseJsonConfigFileContent(cfg.config, ts.sys, SDK).options;
  const program = ts.createProgram([CLIENT_TS], { ...options, noEmit: true });
  const checker = program.getTypeChecker();
  const file = program.getSourceFile(CLIENT_TS);
  const mod = file && checker.getSymbolAtLocation(file);
  const client = mod && checker.getExportsOfModule(mod).find((s) => s.name === "Client");
  if (!client) throw new Error(`${CLIENT_TS}: no Client read`);
  const out = new Map<string, Map<string, DeclaredMember>>();
  for (const method of checker.getPropertiesOfType(checker.getDeclaredTypeOfSymbol(client))) {
    if (!/^list[A-Z]/.test(method.name)) continue;
    const [sig] = checker.getTypeOfSymbol(method).getCallSignatures();
    const answer = sig && checker.getAwaitedType(sig.getReturnType());
    const items = answer && checker.getPropertyOfType(answer, "items");
    const item = items && checker.getIndexTypeOfType(checker.getNonNullableType(checker.getTypeOfSymbol(items)), ts.IndexKind.Number);
    if (!item) throw new Error(`Client.${method.name}: its answer has no items array`);
    out.set(method.name, membersOf(checker, item));
  }
  cached = out;
  return out;
}

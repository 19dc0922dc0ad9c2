// Runs ALL the conformance vectors (testdata/conformance/vectors.json, or
// PROMPTD_CONFORMANCE_VECTORS) through the local evaluator and prints the
// count ("typescript: 57/57 vectors").

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { AskServer, PromptdError, assembleLocal, resolveLocal, type Bundle, type LocalRequest } from "../src/index.js";
import { checkBundleFormat } from "../src/assemble.js";
import { repoRoot } from "./harness.js";

interface Vector {
  name: string;
  bundle: Bundle;
  request: LocalRequest;
  expect: { resolve: unknown; assembled: unknown };
}

interface ExpectedError { code: string; status: number; field?: string; variable?: string }
type Expected = Record<string, unknown>;

function outcome(f: () => unknown): unknown {
  try {
    return f();
  } catch (err) {
    if (err instanceof AskServer) return { server: true, reason: err.reason };
    if (err instanceof PromptdError) {
      const p = err as PromptdError;
      const f: Record<string, unknown> = p.fields;
      return { error: { code: p.code, status: p.status, field: f["field"], variable: f["variable"] } };
    }
    throw err;
  }
}

function compare(got: unknown, want: Expected): void {
  if ("error" in want) {
    const w = want["error"] as ExpectedError;
    const g = got as { error?: ExpectedError };
    assert.ok(g.error, `expected error ${JSON.stringify(w)}, got ${JSON.stringify(got)}`);
    assert.equal(g.error.code, w.code);
    assert.equal(g.error.status, w.status);
    if (w.field !== undefined) assert.equal(g.error.field, w.field);
    if (w.variable !== undefined) assert.equal(g.error.variable, w.variable);
    return;
  }
  assert.deepEqual(JSON.parse(JSON.stringify(got)), want);
}

test("conformance_allVectors_localEvaluatorMatchesTheServer", () => {
  const path = process.env["PROMPTD_CONFORMANCE_VECTORS"] ?? join(repoRoot, "testdata", "conformance", "vectors.json");
  const file = JSON.parse(readFileSync(path, "utf8")) as { format: number; vectors: Vector[] };
  assert.equal(file.format, 1, "vectors file format 1");
  const failures: string[] = [];
  for (const v of file.vectors) {
    try {
      // As LocalPrompts answers: a bundle format it does not know is the server's.
      compare(outcome(() => { checkBundleFormat(v.bundle); const { picked: _p, ...r } = resolveLocal(v.bundle, v.request); return r; }), v.expect.resolve as Expected);
      compare(outcome(() => { checkBundleFormat(v.bundle); return assembleLocal(v.bundle, v.request); }), v.expect.assembled as Expected);
    } catch (err) {
      failures.push(`${v.name}: ${(err as Error).message.split("\n").slice(0, 12).join("\n")}`);
    }
  }
  const n = file.vectors.length;
  console.log(`typescript: ${n - failures.length}/${n} vectors`);
  assert.deepEqual(failures, [], failures.join("\n\n"));
  assert.ok(n > 0);
});

// Every problem code the server can answer (problem/codes.json, the server's table)
// has its status and its own error class here: a code added to the
// server without one fails this test.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ERROR_STATUS, errorFromProblem } from "../src/errors.js";
import { repoRoot } from "./harness.js";

test("errors_everyCodeOfTheServer_hasItsStatusAndClass", () => {
  const file = JSON.parse(readFileSync(join(repoRoot, "problem", "codes.json"), "utf8")) as {
    codes: { code: string; status: number }[];
  };
  const codes = file.codes.map((c) => [c.code, c.status] as const);
  assert.ok(codes.length > 30, `only ${codes.length} codes read from problem/codes.json`);
  const table: Record<string, number> = ERROR_STATUS;
  const missing = codes.filter(([code]) => !(code in table)).map(([code]) => code);
  assert.deepEqual(missing, []);
  for (const [code, status] of codes) {
    if (!(code in table)) continue;
    assert.equal(table[code], status, `${code}: status`);
    const err = errorFromProblem(status, { code, status, title: "t", detail: "d" });
    assert.equal(err.code, code);
    assert.notEqual(err.constructor.name, "PromptdError", `${code} has no class of its own`);
  }
});

// Every problem code the server can answer (api/errors.go's status table)
// has its status and its own error class here: a code added to the
// server without one fails this test.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ERROR_STATUS, errorFromProblem } from "../src/errors.js";
import { repoRoot } from "./harness.js";

test("errors_everyCodeOfTheServer_hasItsStatusAndClass", () => {
  const src = readFileSync(join(repoRoot, "api", "errors.go"), "utf8");
  const codes = [...src.matchAll(/^\s*"([a-z_]+)":\s*(\d{3}),/gm)].map((m) => [m[1] ?? "", Number(m[2])] as const);
  assert.ok(codes.length > 30, `only ${codes.length} codes read from api/errors.go`);
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

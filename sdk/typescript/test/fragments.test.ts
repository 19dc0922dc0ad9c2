// Fragments in the TypeScript evaluator: includes render in one pass with
// the config's pinned fragments, and a bundle of a format this SDK does not
// know is the server's to answer (AskServer "format_unknown").
import { test } from "node:test";
import assert from "node:assert/strict";
import { AskServer, render, type Bundle } from "../src/index.js";
import { checkBundleFormat } from "../src/assemble.js";

test("render_includesFragments_inOnePass", () => {
  const frags = { s: { name: "safety", text: "S{{x}}" } };
  assert.equal(render("a {{> s}} {{x}} {{>nope}}", { x: "{{> s}}" }, frags), "a S{{> s}} {{> s}} {{>nope}}");
  assert.equal(render("{{{> s}}", { x: "1" }, frags), "{S1");
  // Without fragments (a version stored before them), an include is text.
  assert.equal(render("{{> s}}", {}), "{{> s}}");
});

test("checkBundleFormat_refusesUnknownFormats", () => {
  const b: Bundle = { cursor: "1", agents: {} };
  checkBundleFormat(b);
  checkBundleFormat({ ...b, format: 1 });
  checkBundleFormat({ ...b, format: 2 });
  assert.throws(() => { checkBundleFormat({ ...b, format: 3 }); }, (e: unknown) => e instanceof AskServer && e.reason === ("format_unknown" as AskServer["reason"]));
});

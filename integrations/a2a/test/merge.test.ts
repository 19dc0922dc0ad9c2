// The three-way merge on its own: what one replica changed laid over another's write.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mergeTask } from "../src/index.js";

const text = (s: string): { text: string } => ({ text: s });

test("merge: both replicas appending parts to one artifact keep both appends", () => {
  const base = { id: "t", contextId: "c", artifacts: [{ artifactId: "x", parts: [text("1")] }] };
  const ours = { id: "t", contextId: "c", artifacts: [{ artifactId: "x", parts: [text("1"), text("ours")] }] };
  const theirs = { id: "t", contextId: "c", artifacts: [{ artifactId: "x", parts: [text("1"), text("theirs")] }] };
  assert.deepEqual(mergeTask(base, ours, theirs)["artifacts"], [{ artifactId: "x", parts: [text("1"), text("theirs"), text("ours")] }]);
});

test("merge: status is ours only when ours changed it; metadata key by key, a key ours removed is removed", () => {
  const base = { id: "t", contextId: "c", status: { state: "TASK_STATE_WORKING" }, metadata: { keep: 1, drop: 2, both: 0 } };
  const ours = { id: "t", contextId: "c", status: { state: "TASK_STATE_WORKING" }, metadata: { keep: 1, both: 1 } };
  const theirs = { id: "t", contextId: "c", status: { state: "TASK_STATE_INPUT_REQUIRED" }, metadata: { keep: 1, drop: 2, both: 0, new: 3 } };
  const m = mergeTask(base, ours, theirs);
  assert.deepEqual(m["status"], { state: "TASK_STATE_INPUT_REQUIRED" });
  assert.deepEqual(m["metadata"], { keep: 1, both: 1, new: 3 });
  const ours2 = { ...ours, status: { state: "TASK_STATE_COMPLETED" } };
  assert.deepEqual(mergeTask(base, ours2, theirs)["status"], { state: "TASK_STATE_COMPLETED" });
});

test("merge: history is theirs then the messages ours added, once each", () => {
  const m = (id: string): { messageId: string; parts: { text: string }[] } => ({ messageId: id, parts: [text(id)] });
  const base = { id: "t", history: [m("1")] };
  const ours = { id: "t", history: [m("1"), m("o"), m("shared")] };
  const theirs = { id: "t", history: [m("1"), m("shared"), m("t")] };
  assert.deepEqual((mergeTask(base, ours, theirs)["history"] as { messageId: string }[]).map((x) => x.messageId), ["1", "shared", "t", "o"]);
});

import { test } from "node:test";
import assert from "node:assert/strict";
import { murmur3, bucket } from "../src/murmur3.js";

test("murmur3_matchesTheContractsVectors", () => {
  assert.equal(murmur3(new TextEncoder().encode("hello")), 0x248bfa47);
  assert.equal(bucket("rel_1", "user-1"), 771);
  assert.equal(bucket("rel_1", "user-2"), 8669);
  assert.equal(bucket("rel_1", "alice@example.com"), 34);
  assert.equal(bucket("rel_7f3a", "session-42"), 6397);
  assert.equal(murmur3(new Uint8Array()), 0);
  // Non-ASCII keys hash their UTF-8 bytes, not UTF-16 code units.
  assert.notEqual(bucket("rel_1", "é"), bucket("rel_1", "\u00e9".normalize("NFD")));
});

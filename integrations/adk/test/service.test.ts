// The session service's operations against a real promptd: create, get
// (with numRecentEvents / afterTimestamp), list, delete, appendEvent with
// state deltas under ADK's prefixes.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Runner, createEvent, type Event, type Session } from "@google/adk";
import { LeaseHeldError } from "@promptd/client";
import { SessionConflictError, StateConflictError } from "../src/index.js";
import { Barrier, counterAgent, start, uniq, type Fixture } from "./harness.js";

let fx: Fixture;
before(async () => { fx = await start(); });
after(async () => { await fx.stop(); });

function userEvent(text: string, stateDelta: Record<string, unknown> = {}, timestamp?: number) {
  return createEvent({ invocationId: uniq("inv"), author: "user", content: { role: "user", parts: [{ text }] }, actions: { stateDelta }, ...(timestamp ? { timestamp } : {}) });
}

test("createSession keeps session, app: and user: state, never temp:, and getSession reads it back", async () => {
  const svc = fx.service();
  const alice = uniq("alice");
  const s = await svc.createSession({ appName: fx.app, userId: alice, state: { topic: "tea", "app:theme": "dark", "user:lang": "en", "temp:x": 1 } });
  assert.deepEqual({ ...s.state }, { topic: "tea", "app:theme": "dark", "user:lang": "en" });
  assert.equal(s.appName, fx.app);
  assert.equal(s.userId, alice);

  const again = await fx.service().getSession({ appName: fx.app, userId: alice, sessionId: s.id });
  assert.ok(again);
  assert.deepEqual({ ...again.state }, { topic: "tea", "app:theme": "dark", "user:lang": "en" });

  // The same user's next session sees user: and app: state, not the first session's own keys.
  const s2 = await svc.createSession({ appName: fx.app, userId: alice });
  assert.deepEqual({ ...s2.state }, { "app:theme": "dark", "user:lang": "en" });
  // Another user sees only app: state.
  const s3 = await svc.createSession({ appName: fx.app, userId: uniq("bob") });
  assert.deepEqual({ ...s3.state }, { "app:theme": "dark" });
});

test("appendEvent persists the event and its state delta; temp: keys stay out of the store", async () => {
  const svc = fx.service();
  const user = uniq("u");
  const s = await svc.createSession({ appName: fx.app, userId: user });
  const e1 = userEvent("hello", { step: 1, "temp:t": "x", "user:seen": true });
  await svc.appendEvent({ session: s, event: e1 });
  assert.equal(s.state["step"], 1);
  assert.equal(s.events.length, 1);
  await svc.appendEvent({ session: s, event: userEvent("again", { step: 2 }) });

  const r = await fx.service().getSession({ appName: fx.app, userId: user, sessionId: s.id });
  assert.ok(r);
  assert.equal(r.state["step"], 2);
  assert.equal(r.state["user:seen"], true);
  assert.equal("temp:t" in r.state, false);
  assert.equal(r.events.length, 2);
  assert.equal(r.events[0]!.id, e1.id);
  assert.equal(r.events[0]!.timestamp, e1.timestamp);
  assert.equal(r.events[0]!.content?.parts?.[0]?.text, "hello");
  assert.deepEqual({ ...r.events[0]!.actions.stateDelta }, { step: 1, "user:seen": true }, "temp:t is not in the stored event");
  assert.equal(r.events[1]!.content?.parts?.[0]?.text, "again");
  // A partial event is not stored.
  await svc.appendEvent({ session: r, event: { ...userEvent("partial"), partial: true } });
  assert.equal((await svc.getSession({ appName: fx.app, userId: user, sessionId: s.id }))?.events.length, 2);
});

test("getSession's config: numRecentEvents and afterTimestamp", async () => {
  const svc = fx.service();
  const user = uniq("u");
  const s = await svc.createSession({ appName: fx.app, userId: user });
  const t0 = Date.now() - 10_000;
  for (let i = 0; i < 4; i++) await svc.appendEvent({ session: s, event: userEvent(`m${i}`, { i }, t0 + i * 1000) });
  const key = { appName: fx.app, userId: user, sessionId: s.id };
  const recent = await svc.getSession({ ...key, config: { numRecentEvents: 2 } });
  assert.deepEqual(recent?.events.map((e) => e.content?.parts?.[0]?.text), ["m2", "m3"]);
  assert.equal(recent?.state["i"], 3, "the state is the whole history's, whatever events are returned");
  const afterTs = await svc.getSession({ ...key, config: { afterTimestamp: t0 + 1000 } });
  assert.deepEqual(afterTs?.events.map((e) => e.content?.parts?.[0]?.text), ["m1", "m2", "m3"]);
  const all = await svc.getSession(key);
  assert.equal(all?.events.length, 4);
});

test("getSession answers undefined for an unknown id, another user or another app", async () => {
  const svc = fx.service();
  const user = uniq("u");
  const s = await svc.createSession({ appName: fx.app, userId: user });
  assert.equal(await svc.getSession({ appName: fx.app, userId: user, sessionId: uniq("nope") }), undefined);
  assert.equal(await svc.getSession({ appName: fx.app, userId: uniq("other"), sessionId: s.id }), undefined);
  assert.equal(await svc.getSession({ appName: "other-app", userId: user, sessionId: s.id }), undefined);
  await assert.rejects(svc.createSession({ appName: fx.app, userId: user, sessionId: s.id }), /already exists/);
});

test("listSessions by user and for the app, paged; deleteSession hides the session", async () => {
  const svc = fx.service();
  const user = uniq("lister");
  const a = await svc.createSession({ appName: fx.app, userId: user, state: { "user:x": 1 } });
  const b = await svc.createSession({ appName: fx.app, userId: user });
  const mine = await svc.listSessions({ appName: fx.app, userId: user });
  assert.deepEqual(mine.sessions.map((s) => s.id).sort(), [a.id, b.id].sort());
  assert.equal(mine.totalItems, 2);
  for (const s of mine.sessions) assert.deepEqual(s.events, []);
  const everyone = await svc.listSessions({ appName: fx.app });
  assert.ok(everyone.totalItems >= 2 && everyone.sessions.every((s) => !s.id.startsWith("adk-")), "scope sessions are not listed");
  const p2 = await svc.listSessions({ appName: fx.app, userId: user, limit: 1, page: 2, order: "asc" });
  assert.equal(p2.sessions.length, 1);
  assert.equal(p2.totalPages, 2);
  assert.equal(p2.page, 2);

  await svc.deleteSession({ appName: fx.app, userId: user, sessionId: a.id });
  assert.equal(await svc.getSession({ appName: fx.app, userId: user, sessionId: a.id }), undefined);
  assert.deepEqual((await svc.listSessions({ appName: fx.app, userId: user })).sessions.map((s) => s.id), [b.id]);
  // Another user's delete does nothing.
  await svc.deleteSession({ appName: fx.app, userId: uniq("other"), sessionId: b.id });
  assert.ok(await svc.getSession({ appName: fx.app, userId: user, sessionId: b.id }));
});

test("appendEvent on a Session read before another append is refused (SessionConflictError), nothing written", async () => {
  const w1 = fx.service();
  const w2 = fx.service();
  const user = uniq("u");
  const s = await w1.createSession({ appName: fx.app, userId: user });
  const key = { appName: fx.app, userId: user, sessionId: s.id };
  const stale = await w2.getSession(key);
  assert.ok(stale);
  await w1.appendEvent({ session: s, event: userEvent("first", { k: "w1" }) });
  const err = await w2.appendEvent({ session: stale, event: userEvent("second", { k: "w2" }) }).then(() => undefined, (e: unknown) => e);
  assert.ok(err instanceof SessionConflictError, String(err));
  assert.equal(err.expectedRevision, 0);
  assert.equal(err.currentRevision, 1);
  assert.equal(stale.events.length, 0, "the stale Session object is left as it was");
  const now = await w1.getSession(key);
  assert.equal(now?.state["k"], "w1");
  assert.deepEqual(now?.events.map((e) => e.content?.parts?.[0]?.text), ["first"]);
});

test("user: keys changed by another session of the same user conflict (StateConflictError)", async () => {
  const svc = fx.service();
  const user = uniq("u");
  const s1 = await svc.createSession({ appName: fx.app, userId: user, state: { "user:credits": 10 } });
  const s2 = await svc.createSession({ appName: fx.app, userId: user });
  assert.equal(s2.state["user:credits"], 10);
  await svc.appendEvent({ session: s1, event: userEvent("spend 3", { "user:credits": 7 }) });
  const err = await svc.appendEvent({ session: s2, event: userEvent("spend 5", { "user:credits": 5 }) }).then(() => undefined, (e: unknown) => e);
  assert.ok(err instanceof StateConflictError, String(err));
  assert.equal(err.key, "user:credits");
  const r2 = await svc.getSession({ appName: fx.app, userId: user, sessionId: s2.id });
  assert.equal(r2?.state["user:credits"], 7, "s1's write stands");
  assert.equal(r2?.events.length, 0, "s2's event was not appended");
  // Re-read, re-apply: the retry lands.
  await svc.appendEvent({ session: r2, event: userEvent("spend 5", { "user:credits": (r2.state["user:credits"] as number) - 5 }) });
  assert.equal((await svc.getSession({ appName: fx.app, userId: user, sessionId: s1.id }))?.state["user:credits"], 2);
});

test("while runExclusive holds the session, a write without the lease is refused (423 lease_held)", async () => {
  const svc = fx.service();
  const other = fx.service();
  const user = uniq("u");
  const s = await svc.createSession({ appName: fx.app, userId: user });
  const key = { appName: fx.app, userId: user, sessionId: s.id };
  const outsider = await other.getSession(key);
  await svc.runExclusive(s.id, async () => {
    const inside = (await svc.getSession(key))!;
    await svc.appendEvent({ session: inside, event: userEvent("inside", { who: "holder" }) });
    await assert.rejects(other.appendEvent({ session: outsider!, event: userEvent("outside") }), (e: unknown) => e instanceof LeaseHeldError);
  });
  const r = (await other.getSession(key)) as Session;
  assert.deepEqual(r.events.map((e) => e.content?.parts?.[0]?.text), ["inside"]);
  assert.equal(r.state["who"], "holder");
});

test("appendEvent refuses a Session object the service did not hand out", async () => {
  const svc = fx.service();
  const s = await svc.createSession({ appName: fx.app, userId: uniq("u") });
  await assert.rejects(svc.appendEvent({ session: { ...s }, event: userEvent("x") }), /not read from this PromptdSessionService/);
});

test("state keys of any shape round-trip: long, unicode, __proto__", async () => {
  const svc = fx.service();
  const user = uniq("u");
  const long = "user:" + "k".repeat(200);
  const state = JSON.parse(`{"${long}": 1, "user:naïve ключ": "ok", "app:${"a".repeat(150)}": [1], "__proto__": {"polluted": true}}`) as Record<string, unknown>;
  const s = await svc.createSession({ appName: fx.app, userId: user, state });
  const r = (await fx.service().getSession({ appName: fx.app, userId: user, sessionId: s.id }))!;
  assert.equal(r.state[long], 1);
  assert.equal(r.state["user:naïve ключ"], "ok");
  assert.deepEqual(r.state[`app:${"a".repeat(150)}`], [1]);
  assert.ok(Object.prototype.hasOwnProperty.call(r.state, "__proto__"), "__proto__ is an own key");
  assert.equal(({} as Record<string, unknown>)["polluted"], undefined, "no prototype pollution");
});

test("Runner.runEphemeral creates a session and deletes it after the run", async () => {
  const svc = fx.service();
  const user = uniq("u");
  const runner = new Runner({ appName: fx.app, agent: counterAgent("E", new Barrier(1, 0)), sessionService: svc });
  const events: Event[] = [];
  for await (const e of runner.runEphemeral({ userId: user, newMessage: { role: "user", parts: [{ text: "bump" }] } })) events.push(e);
  assert.equal(events.at(-1)?.content?.parts?.[0]?.text, "done");
  assert.ok(events.some((e) => e.actions.stateDelta["counter"] === 1), "the tool's delta went through the service");
  assert.equal((await svc.listSessions({ appName: fx.app, userId: user })).totalItems, 0);
});

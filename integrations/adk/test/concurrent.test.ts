// google/adk-python#4751 as a test: two concurrent runs on one session, each
// incrementing a counter (and appending to a list) from the state it read.
// ADK's InMemorySessionService loses one update and interleaves the runs'
// events; PromptdSessionService either serializes the runs (runExclusive:
// both updates land, one run's events after the other's) or refuses the
// loser's write (SessionConflictError) so no update is lost.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { InMemorySessionService, Runner, createEvent, type BaseSessionService, type Event, type Session } from "@google/adk";
import { SessionConflictError, type PromptdSessionService } from "../src/index.js";
import { Barrier, counterAgent, invocationSwitches, start, uniq, type Fixture } from "./harness.js";

let fx: Fixture;
before(async () => { fx = await start(); });
after(async () => { await fx.stop(); });

const message = (text: string) => ({ role: "user", parts: [{ text }] });

async function drain(it: AsyncGenerator<Event>): Promise<Event[]> {
  const out: Event[] = [];
  for await (const e of it) out.push(e);
  return out;
}

/** The ids of the function-response events that carry a counter write. */
function bumps(s: Session): Event[] {
  return s.events.filter((e) => "counter" in e.actions.stateDelta);
}

test("control: ADK's InMemorySessionService loses one of two concurrent increments and interleaves the runs", async () => {
  const svc = new InMemorySessionService();
  const app = fx.app;
  const user = uniq("u");
  const s = await svc.createSession({ appName: app, userId: user, state: { counter: 0 } });
  const barrier = new Barrier(2, 5000);
  const run = (who: string) => drain(new Runner({ appName: app, agent: counterAgent(who, barrier), sessionService: svc }).runAsync({ userId: user, sessionId: s.id, newMessage: message(`bump from ${who}`) }));
  const [a, b] = await Promise.all([run("A"), run("B")]);
  assert.ok(barrier.met, "both runs read the state before either wrote");
  assert.equal(a.at(-1)?.content?.parts?.[0]?.text, "done");
  assert.equal(b.at(-1)?.content?.parts?.[0]?.text, "done");
  const final = (await svc.getSession({ appName: app, userId: user, sessionId: s.id }))!;
  console.log(`in-memory: counter=${String(final.state["counter"])} visits=${JSON.stringify(final.state["visits"])} increments recorded=${bumps(final).length} invocation switches=${invocationSwitches(final.events)}`);
  assert.equal(bumps(final).length, 2, "both runs recorded an increment event");
  assert.equal(final.state["counter"], 1, "the lost update: two increments, counter 1");
  assert.equal((final.state["visits"] as string[]).length, 1, "one run's list append is lost");
  assert.equal(final.state["user:runs"], 1);
  assert.ok(invocationSwitches(final.events) >= 2, "the two runs' events are interleaved");
});

test("promptd, runExclusive: two concurrent runs on one session both land, one after the other", async () => {
  const w1 = fx.service();
  const w2 = fx.service();
  const user = uniq("u");
  const s = await w1.createSession({ appName: fx.app, userId: user, state: { counter: 0 } });
  const totalBefore = s.state["app:total"] as number | undefined ?? 0;
  const barrier = new Barrier(2, 1500);
  const run = (who: string, svc: PromptdSessionService) => svc.runExclusive(s.id, () =>
    drain(new Runner({ appName: fx.app, agent: counterAgent(who, barrier), sessionService: svc }).runAsync({ userId: user, sessionId: s.id, newMessage: message(`bump from ${who}`) })));
  const [a, b] = await Promise.all([run("A", w1), run("B", w2)]);
  assert.equal(barrier.met, false, "the second run only read after the first had written");
  assert.equal(a.at(-1)?.content?.parts?.[0]?.text, "done");
  assert.equal(b.at(-1)?.content?.parts?.[0]?.text, "done");

  const final = (await fx.service().getSession({ appName: fx.app, userId: user, sessionId: s.id }))!;
  console.log(`promptd runExclusive: counter=${String(final.state["counter"])} visits=${JSON.stringify(final.state["visits"])} increments recorded=${bumps(final).length} invocation switches=${invocationSwitches(final.events)}`);
  assert.equal(final.state["counter"], 2, "both increments");
  assert.deepEqual([...(final.state["visits"] as string[])].sort(), ["A", "B"]);
  assert.equal(final.state["user:runs"], 2);
  assert.equal(final.state["app:total"], totalBefore + 2);
  assert.equal("temp:scratch" in final.state, false, "temp: is never persisted");
  assert.equal(final.events.length, 8, "4 events a run: user message, call, result, answer");
  assert.equal(invocationSwitches(final.events), 1, "one run's events, then the other's: not interleaved");
  // The promptd history is linear: seqs 1..n, one turn per event.
  const head = await w1.client.getSession(s.id, { limit: 500 });
  assert.deepEqual(head.turns?.map((t) => t.seq), [1, 2, 3, 4, 5, 6, 7, 8, 9]);
});

test("promptd, no lease: of two concurrent runs the loser gets SessionConflictError and no increment is lost", async () => {
  const w1 = fx.service();
  const w2 = fx.service();
  const user = uniq("u");
  const s = await w1.createSession({ appName: fx.app, userId: user, state: { counter: 0 } });
  const barrier = new Barrier(2, 1500);
  const run = (who: string, svc: PromptdSessionService) =>
    drain(new Runner({ appName: fx.app, agent: counterAgent(who, barrier), sessionService: svc }).runAsync({ userId: user, sessionId: s.id, newMessage: message(`bump from ${who}`) }));
  const outcomes = await Promise.allSettled([run("A", w1), run("B", w2)]);
  const failed = outcomes.filter((o) => o.status === "rejected");
  assert.equal(failed.length, 1, "exactly one run lost");
  assert.ok((failed[0] as PromiseRejectedResult).reason instanceof SessionConflictError, String((failed[0] as PromiseRejectedResult).reason));

  const final = (await fx.service().getSession({ appName: fx.app, userId: user, sessionId: s.id }))!;
  console.log(`promptd no lease: counter=${String(final.state["counter"])} increments recorded=${bumps(final).length} conflicts=${failed.length}`);
  assert.equal(final.state["counter"], bumps(final).length, "every recorded increment is in the counter");
  // Each recorded increment wrote the counter it read + 1: a linear history.
  assert.deepEqual(bumps(final).map((e) => e.actions.stateDelta["counter"]), bumps(final).map((_e, i) => i + 1));

  // The loser retries: a new run reads the session again and its increment lands on top.
  const loser = outcomes[0].status === "rejected" ? w1 : w2;
  await run("retry", loser);
  const retried = (await fx.service().getSession({ appName: fx.app, userId: user, sessionId: s.id }))!;
  console.log(`promptd no lease, after the loser's retry: counter=${String(retried.state["counter"])} increments recorded=${bumps(retried).length}`);
  assert.equal(retried.state["counter"], bumps(final).length + 1);
  assert.equal(retried.state["counter"], bumps(retried).length);
});

/** The Runner's read-modify-append, done by hand on two workers: each reads, derives counter + 1, appends. */
async function raceByHand(w1: BaseSessionService, w2: BaseSessionService, app: string): Promise<{ second: unknown; final: Session }> {
  const user = uniq("u");
  const s = await w1.createSession({ appName: app, userId: user, state: { counter: 0 } });
  const key = { appName: app, userId: user, sessionId: s.id };
  const r1 = (await w1.getSession(key))!;
  const r2 = (await w2.getSession(key))!;
  const bump = (r: Session, who: string) => createEvent({ invocationId: uniq(who), author: "counter", actions: { stateDelta: { counter: (r.state["counter"] as number) + 1 } } });
  await w1.appendEvent({ session: r1, event: bump(r1, "w1") });
  const second = await w2.appendEvent({ session: r2, event: bump(r2, "w2") }).then(() => undefined, (e: unknown) => e);
  if (second instanceof SessionConflictError) {
    // The documented retry: re-read, derive the delta again, append.
    const fresh = (await w2.getSession(key))!;
    await w2.appendEvent({ session: fresh, event: bump(fresh, "w2") });
  }
  return { second, final: (await w1.getSession(key))! };
}

test("control by hand: on InMemorySessionService the second read-modify-append overwrites the first", async () => {
  const svc = new InMemorySessionService();
  const { second, final } = await raceByHand(svc, svc, fx.app);
  assert.equal(second, undefined, "no error");
  assert.equal(final.events.length, 2);
  assert.equal(final.state["counter"], 1, "lost update");
});

test("by hand on promptd: the second append conflicts; re-read and re-applied, counter is 2", async () => {
  const { second, final } = await raceByHand(fx.service(), fx.service(), fx.app);
  assert.ok(second instanceof SessionConflictError, String(second));
  assert.equal(final.events.length, 2);
  assert.equal(final.state["counter"], 2);
});

// Two run()s on one conversation at once, through the SDK's real runner on
// a real promptd. PromptdSession promises: never a forked or interleaved
// history. Without a hold, the run that writes second fails with
// SessionConflictError and nothing of it is stored; with hold(), the second
// run fails with SessionBusyError before it calls the model (or, with
// waitMs, runs after the first and sees its items). The controls run the
// same two runs on the SDK's MemorySession and on a naive promptd session
// (appends at whatever the revision is, no lease): both runs "succeed" and
// the stored history is forked: the transcript has the second turn answer
// after the first, but its model never saw the first.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { MemorySession, type AgentInputItem, type Runner, type Session } from "@openai/agents";
import { RevisionConflictError, type Client, type NewTurn } from "@promptd/client";
import { SessionBusyError, SessionConflictError, SessionLeaseLostError } from "../src/index.js";
import { itemTurn, History } from "../src/turns.js";
import { promptd, session, uniq, agentOn, FakeModel, replica, barrier, kinds, userTexts, type Promptd } from "./harness.js";

let pd: Promptd;
before(async () => { pd = await promptd(); });
after(() => pd.proc.stop());

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** One turn of the agent: non-streamed, or streamed to the end. */
async function turn(runner: Runner, model: FakeModel, input: string, s: Session, stream = false): Promise<string> {
  if (!stream) return String((await runner.run(agentOn(model), input, { session: s })).finalOutput);
  const r = await runner.run(agentOn(model), input, { session: s, stream: true });
  for await (const _ of r) { /* drain */ }
  await r.completed;
  return String(r.finalOutput);
}

/** The two results, as [the fulfilled ones' values, the rejected ones' reasons]. */
function split(rs: PromiseSettledResult<string>[]): [string[], unknown[]] {
  return [
    rs.flatMap((r) => (r.status === "fulfilled" ? [r.value] : [])),
    rs.flatMap((r) => (r.status === "rejected" ? [r.reason as unknown] : [])),
  ];
}

/** Seeds a conversation of one turn ("seed") and returns its id. */
async function seeded(): Promise<string> {
  const id = uniq("s");
  await turn(replica(), new FakeModel("seed"), "seed", session(pd, id));
  return id;
}

for (const stream of [false, true]) {
  test(`two concurrent ${stream ? "streamed " : ""}runs on two replicas: one gets SessionConflictError, the other's turn is stored whole, nothing forked`, async () => {
    const id = await seeded();
    const gate = barrier(2);
    const a = new FakeModel("A", gate);
    const b = new FakeModel("B", gate);
    const [ok, failed] = split(await Promise.allSettled([
      turn(replica(), a, "from A", session(pd, id), stream),
      turn(replica(), b, "from B", session(pd, id), stream),
    ]));
    assert.equal(ok.length, 1, `one run succeeds: ${String(failed[0])}`);
    assert.equal(failed.length, 1);
    assert.ok(failed[0] instanceof SessionConflictError, `the loser's error: ${String(failed[0])}`);
    const winner = ok[0]!.startsWith("A") ? "A" : "B";
    assert.equal(ok[0], `${winner} saw 2 user messages`);
    const stored = await session(pd, id).getItems();
    assert.deepEqual(userTexts(stored), ["seed", `from ${winner}`]);
    assert.deepEqual(kinds(stored), [...Array<string[]>(2).fill(["user", "function_call", "function_call_result", "assistant"])].flat());
    assert.equal(stored.filter((i) => JSON.stringify(i).includes(winner === "A" ? "B-" : "A-")).length, 0, "nothing of the loser");
  });
}

test("two concurrent runs through one PromptdSession object: the runner's RunContext tells them apart, one gets SessionConflictError", async () => {
  const id = await seeded();
  const s = session(pd, id);
  const gate = barrier(2);
  const [ok, failed] = split(await Promise.allSettled([
    turn(replica(), new FakeModel("A", gate), "from A", s),
    turn(replica(), new FakeModel("B", gate), "from B", s),
  ]));
  assert.equal(ok.length, 1);
  assert.ok(failed[0] instanceof SessionConflictError, String(failed[0]));
  assert.equal(userTexts(await session(pd, id).getItems()).length, 2);
});

test("held runs: the second run's hold() fails with SessionBusyError before it calls the model; an unheld run cannot write either", async () => {
  const id = await seeded();
  const sa = session(pd, id, "replica-a");
  const sb = session(pd, id, "replica-b");
  let open!: () => void;
  const opened = new Promise<void>((r) => { open = r; });
  const a = new FakeModel("A", () => opened);
  const hold = await sa.hold({ ttlMs: 1000 });
  const runA = turn(replica(), a, "from A", sa);

  const b = new FakeModel("B");
  await assert.rejects(sb.withHold(() => turn(replica(), b, "from B", sb)), (err: unknown) => {
    assert.ok(err instanceof SessionBusyError);
    assert.equal(err.holder, "replica-a");
    return true;
  });
  assert.equal(b.inputs.length, 0, "B's model was never called");
  // Without a hold, B's run reads and calls its model, but its append is refused (423 lease_held).
  await assert.rejects(turn(replica(), b, "from B unheld", sb), SessionBusyError);

  await sleep(2500); // A's run outlives its lease's TTL: the keepalive renews it
  assert.ok(hold.active, "A still holds (a lease that ran out unrenewed is marked lost)");
  await assert.rejects(sb.hold(), SessionBusyError);
  open();
  assert.equal(await runA, "A saw 2 user messages");
  await hold.release();
  assert.deepEqual(userTexts(await session(pd, id).getItems()), ["seed", "from A"]);
  // Released: B holds and continues the conversation A left.
  assert.equal(await sb.withHold(() => turn(replica(), new FakeModel("B"), "from B", sb)), "B saw 3 user messages");
});

test("held runs with waitMs serialize: the second runs after the first and sees its items", async () => {
  const id = await seeded();
  const sa = session(pd, id, "replica-a");
  const sb = session(pd, id, "replica-b");
  let inModel!: () => void;
  const aInModel = new Promise<void>((r) => { inModel = r; });
  const a = new FakeModel("A", () => { inModel(); return sleep(300); });
  const b = new FakeModel("B", () => sleep(300));
  const runA = sa.withHold(() => turn(replica(), a, "from A", sa), { waitMs: 10_000 });
  await aInModel; // A holds the session and is answering
  const runB = sb.withHold(() => turn(replica(), b, "from B", sb), { waitMs: 10_000 });
  assert.deepEqual(await Promise.all([runA, runB]), ["A saw 2 user messages", "B saw 3 user messages"]);
  const stored = await session(pd, id).getItems();
  assert.deepEqual(userTexts(stored), ["seed", "from A", "from B"]);
  assert.equal(stored.length, 12);
  assert.deepEqual(userTexts(b.inputs[0]!), ["seed", "from A", "from B"], "B's model saw A's turn");
});

test("a run whose session was taken over (preempt) cannot write: SessionLeaseLostError, and its signal aborted", async () => {
  const id = await seeded();
  const sa = session(pd, id, "replica-a");
  const sb = session(pd, id, "replica-b");
  let open!: () => void;
  const opened = new Promise<void>((r) => { open = r; });
  let inModel!: () => void;
  const aInModel = new Promise<void>((r) => { inModel = r; });
  const holdA = await sa.hold();
  const runA = turn(replica(), new FakeModel("A", () => { inModel(); return opened; }), "from A", sa);
  await aInModel; // A read the history and is answering
  assert.equal(await sb.withHold(() => turn(replica(), new FakeModel("B"), "from B", sb), { preempt: true }), "B saw 2 user messages");
  open();
  await assert.rejects(runA, SessionLeaseLostError);
  assert.ok(holdA.signal.aborted);
  await assert.rejects(sa.addItems([{ role: "user", content: "late" }]), SessionLeaseLostError, "lost until released: no unfenced write");
  await holdA.release();
  assert.deepEqual(userTexts(await session(pd, id).getItems()), ["seed", "from B"]);
  // Released, A's object can hold again and continues after B.
  assert.equal(await sa.withHold(() => turn(replica(), new FakeModel("A"), "A again", sa)), "A saw 3 user messages");
});

// Controls: the same concurrent runs without promptd's revision and fence checks.

/**
 * A promptd session without the checks: reads the turns, appends at
 * whatever the revision is now (re-reading it when another append won the
 * race), and takes no lease.
 */
class NaiveSession implements Session {
  constructor(private readonly client: Client, private readonly id: string) {}
  getSessionId(): Promise<string> { return Promise.resolve(this.id); }
  async getItems(): Promise<AgentInputItem[]> {
    const h = new History();
    h.apply((await this.client.getSession(this.id, { limit: 500 })).turns ?? []);
    return h.live.map((l) => l.item);
  }
  async addItems(items: AgentInputItem[]): Promise<void> {
    const turns: NewTurn[] = items.map(itemTurn);
    for (;;) {
      const { revision } = await this.client.getSession(this.id, { limit: 1 });
      try {
        await this.client.appendTurns(this.id, turns, { expectedRevision: revision });
        return;
      } catch (err) {
        if (!(err instanceof RevisionConflictError)) throw err;
      }
    }
  }
  popItem(): Promise<AgentInputItem | undefined> { return Promise.reject(new Error("not in the control")); }
  clearSession(): Promise<void> { return Promise.reject(new Error("not in the control")); }
}

const controls: { name: string; make: (id: string) => Promise<[Session, Session, () => Promise<AgentInputItem[]>]> }[] = [
  {
    name: "the SDK's MemorySession (shared by both runs)",
    make: async (id) => {
      const m = new MemorySession({ sessionId: id });
      await turn(replica(), new FakeModel("seed"), "seed", m);
      return [m, m, () => m.getItems()];
    },
  },
  {
    name: "a naive promptd session (no revision nor fence checks)",
    make: async (id) => {
      await turn(replica(), new FakeModel("seed"), "seed", session(pd, id));
      return [new NaiveSession(pd.runtime, id), new NaiveSession(pd.runtime, id), () => session(pd, id).getItems()];
    },
  },
];

for (const c of controls) {
  test(`control, ${c.name}: both concurrent runs "succeed" and the stored history is forked`, async () => {
    const [sa, sb, read] = await c.make(uniq("s"));
    const gate = barrier(2);
    const a = new FakeModel("A", gate);
    const b = new FakeModel("B", gate);
    const out = await Promise.all([turn(replica(), a, "from A", sa), turn(replica(), b, "from B", sb)]);
    assert.deepEqual(out, ["A saw 2 user messages", "B saw 2 user messages"], "each answered without the other's turn");
    const stored = await read();
    const texts = userTexts(stored);
    assert.equal(stored.length, 12, "both turns stored");
    assert.deepEqual([...texts].sort(), ["from A", "from B", "seed"]);
    // The transcript shows the later turn answered after the earlier one, but its model never saw it: a fork.
    const later = texts[2] === "from A" ? a : b;
    assert.deepEqual(userTexts(later.inputs[0]!), ["seed", texts[2]!]);
  });
}

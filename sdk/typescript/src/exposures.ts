// Exposure batching: local resolves are counted per (agent, env,
// release_id, version, arm, minute) and sent to POST /v1/exposures. Each
// batch gets its own Idempotency-Key when it is cut, kept across retries
// (in the transport and across flushes), so a batch is counted once.

import type { Client } from "./client.js";
import { newIdempotencyKey } from "./http.js";
import type { ExposureItem } from "./types.js";

const MAX_ITEMS = 1000;

export class ExposureBatcher {
  private readonly client: Client;
  private counts = new Map<string, ExposureItem>();
  private pending: { key: string; items: ExposureItem[] }[] = [];
  private flushing: Promise<void> | undefined;
  /** Items accepted by the server so far (sum of counts). */
  sent = 0;

  constructor(client: Client) {
    this.client = client;
  }

  add(e: Omit<ExposureItem, "count" | "at">, now = Date.now()): void {
    const minute = new Date(now - (now % 60_000)).toISOString();
    const k = JSON.stringify([e.agent, e.env, e.release_id ?? "", e.version, e.arm ?? "", minute]);
    const cur = this.counts.get(k);
    if (cur) cur.count++;
    else this.counts.set(k, { ...e, count: 1, at: minute });
  }

  /** Unsent counts (cut or not). */
  get unsent(): number {
    let n = 0;
    for (const it of this.counts.values()) n += it.count;
    for (const b of this.pending) for (const it of b.items) n += it.count;
    return n;
  }

  /** Cuts the current counts into batches and sends every batch not yet accepted. */
  flush(): Promise<void> {
    if (this.flushing) return this.flushing.then(() => this.flush());
    const items = [...this.counts.values()];
    this.counts = new Map();
    for (let i = 0; i < items.length; i += MAX_ITEMS) this.pending.push({ key: newIdempotencyKey(), items: items.slice(i, i + MAX_ITEMS) });
    this.flushing = (async () => {
      try {
        while (this.pending.length > 0) {
          const b = this.pending[0]!;
          await this.client.postExposures(b.items, { idempotencyKey: b.key });
          this.pending.shift();
          for (const it of b.items) this.sent += it.count;
        }
      } finally {
        this.flushing = undefined;
      }
    })();
    return this.flushing;
  }
}

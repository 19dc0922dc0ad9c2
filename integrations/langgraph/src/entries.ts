// How PromptdSaver lays a thread out in its session's state entries.
//
// c.<ns tag>.<checkpoint id>: one checkpoint, without its channel values,
//   plus the values of the channels whose version it introduced (blobs), so a
//   value is stored once per (channel, version) and a checkpoint is read back
//   from its channel_versions, as the SQL savers do.
// w.<hash of ns, checkpoint id, task id>: one task's pending writes, by idx.
// A tombstone (value null) is a removed entry (deleteThread, rollback).
// Every entry carries the fence it was written with (f), which is how a
// rollback finds the entries of the run it interrupted.

import { createHash } from "node:crypto";
import {
  TASKS, compareWritesSortKeys, maxChannelVersion, writesSortKey,
  type Checkpoint, type CheckpointMetadata, type CheckpointPendingWrite, type CheckpointTuple, type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import type { StateEntry } from "@promptd/client";

export interface Blob { v: string; t: string; d: string }

export interface StoredCheckpoint {
  k: "c";
  thread: string;
  ns: string;
  id: string;
  parent: string | null;
  t: string; // serde type of the checkpoint without its channel_values
  d: string; // base64
  mt: string;
  md: string;
  blobs: Record<string, Blob>;
  f: number; // the fence it was written with (0: unfenced)
}

export interface StoredWrite { ch: string; t: string; d: string }

export interface StoredWrites {
  k: "w";
  thread: string;
  ns: string;
  cp: string;
  task: string;
  path: string;
  w: Record<string, StoredWrite>; // idx -> write
  f: number;
}

export type Stored = StoredCheckpoint | StoredWrites;
export type Entries = Record<string, StateEntry<Stored | null>>;

export const sha = (s: string): string => createHash("sha256").update(s).digest("hex");
export const b64 = (u: Uint8Array): string => Buffer.from(u).toString("base64");
export const unb64 = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, "base64"));
export const desc = (a: { id: string }, b: { id: string }): number => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

export function nsTag(ns: string): string {
  return ns === "" ? "r" : "n" + sha(ns).slice(0, 24);
}
export function idPart(id: string): string {
  return /^[A-Za-z0-9._-]{1,80}$/.test(id) ? id : "h" + sha(id).slice(0, 40);
}

/** A stored checkpoint as a CheckpointTuple: its channel values from the blob index, its pending writes in writesSortKey order. */
export async function decodeTuple(
  serde: SerializerProtocol, cp: StoredCheckpoint, all: Stored[], blobs: Map<string, Blob>, firstVersion: number | string,
): Promise<CheckpointTuple> {
  const writes = all
    .filter((w): w is StoredWrites => w.k === "w" && w.ns === cp.ns && w.cp === cp.id)
    .flatMap((w) => Object.entries(w.w).map(([idx, v]) => ({ task: w.task, v, key: writesSortKey(w.path, w.task, Number(idx)) })))
    .sort((a, b) => compareWritesSortKeys(a.key, b.key));
  const pendingWrites: CheckpointPendingWrite[] = await Promise.all(
    writes.map(async ({ task, v }) => [task, v.ch, await serde.loadsTyped(v.t, unb64(v.d))] as CheckpointPendingWrite),
  );
  const checkpoint = (await serde.loadsTyped(cp.t, unb64(cp.d))) as Checkpoint;
  const values: Record<string, unknown> = {};
  for (const [ch, ver] of Object.entries(checkpoint.channel_versions)) {
    const b = blobs.get(`${cp.ns}\u0000${ch}\u0000${String(ver)}`);
    if (b) values[ch] = await serde.loadsTyped(b.t, unb64(b.d));
  }
  checkpoint.channel_values = values;
  if (checkpoint.v < 4 && cp.parent) {
    // Checkpoints before v4 kept pending sends as the parent's TASKS writes.
    const sends = all
      .filter((w): w is StoredWrites => w.k === "w" && w.ns === cp.ns && w.cp === cp.parent)
      .flatMap((w) => Object.entries(w.w).filter(([, v]) => v.ch === TASKS).map(([idx, v]) => ({ v, key: writesSortKey(w.path, w.task, Number(idx)) })))
      .sort((a, b) => compareWritesSortKeys(a.key, b.key));
    checkpoint.channel_values[TASKS] = await Promise.all(sends.map(({ v }) => serde.loadsTyped(v.t, unb64(v.d))));
    const versions = Object.values(checkpoint.channel_versions);
    checkpoint.channel_versions[TASKS] = versions.length > 0 ? maxChannelVersion(...versions) : firstVersion;
  }
  const t: CheckpointTuple = {
    config: { configurable: { thread_id: cp.thread, checkpoint_ns: cp.ns, checkpoint_id: cp.id } },
    checkpoint,
    metadata: (await serde.loadsTyped(cp.mt, unb64(cp.md))) as CheckpointMetadata,
    pendingWrites,
  };
  if (cp.parent) t.parentConfig = { configurable: { thread_id: cp.thread, checkpoint_ns: cp.ns, checkpoint_id: cp.parent } };
  return t;
}

/** Every stored channel value, by namespace, channel and version. */
export function blobIndex(all: Stored[]): Map<string, Blob> {
  const blobs = new Map<string, Blob>();
  for (const c of all) if (c.k === "c") for (const [ch, b] of Object.entries(c.blobs)) blobs.set(`${c.ns}\u0000${ch}\u0000${b.v}`, b);
  return blobs;
}


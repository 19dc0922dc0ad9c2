// The board's state machine: A2A's task states as board states, and the
// transitions between them that the server checks on every write.

import { TaskState } from "@a2a-js/sdk";
import type { Client } from "@promptd/client";
import { BoardNotFoundError } from "@promptd/client";
import { BoardMachineError } from "./errors.js";

/** A2A's task states, spelled as on the A2A wire (v0.3 names) and as board states. */
export const A2A_STATES = [
  "submitted", "working", "input-required", "auth-required", "completed", "canceled", "failed", "rejected", "unknown",
] as const;

export type A2AState = (typeof A2A_STATES)[number];

/**
 * The one board state that is not an A2A state: a `submitted` task a replica
 * holds through the board's claim (PromptdTaskStore.hold). Its task is still
 * `submitted`; its first status change ends the hold only when it is terminal.
 */
export const HELD = "held";

/** A task in one of these is done: the board refuses every write to it (409 invalid_transition). */
export const TERMINAL_STATES: readonly A2AState[] = ["completed", "canceled", "failed", "rejected"];

const ends: A2AState[] = ["completed", "canceled", "failed", "rejected"];

/**
 * The allowed transitions. A task starts `submitted`; while it is not done it may
 * move between the active and interrupted states (`working`, `input-required`,
 * `auth-required`) or to `unknown`, and from any of those end in a terminal
 * state. Nothing leaves a terminal state. Staying in a state is not a
 * transition (a write that keeps the state sends none).
 */
export const TRANSITIONS: Readonly<Record<A2AState, readonly A2AState[]>> = {
  "submitted": ["working", "input-required", "auth-required", "unknown", ...ends],
  "working": ["input-required", "auth-required", "unknown", ...ends],
  "input-required": ["working", "auth-required", "unknown", ...ends],
  "auth-required": ["working", "input-required", "unknown", ...ends],
  "unknown": ["submitted", "working", "input-required", "auth-required", ...ends],
  "completed": [],
  "canceled": [],
  "failed": [],
  "rejected": [],
};

/** Whether from -> to is a transition of the machine (the server's check, done locally). */
export function allows(from: A2AState, to: A2AState): boolean {
  return TRANSITIONS[from].includes(to);
}

/** The A2A state a board state stands for (`held` is a held `submitted`). */
export function a2aState(boardState: string): string {
  return boardState === HELD ? "submitted" : boardState;
}

/**
 * The board definition (PUT /v1/boards/{board}): the A2A states and
 * transitions, plus `held`. Its claim rule lets a replica hold a `submitted` task
 * (`submitted` -> `held`, a fence and a TTL; the server enters a claim's `to`
 * state through a claim only, so `held` is its own state and `working` stays
 * writable); from `held` the task moves on as from `submitted`, still held, until
 * it ends. A claim that runs out sends the record back to `submitted`, one
 * claimed `maxAttempts` times ends `failed`.
 */
export function boardDefinition(claim: { ttlMs?: number; maxAttempts?: number } = {}): {
  states: string[]; initial: string; transitions: Record<string, string[]>; terminal: string[];
  claim: { from: string; to: string; ttl_ms: number; reclaim_to: string; max_attempts: number; exhausted: string };
} {
  const transitions: Record<string, string[]> = {};
  for (const s of A2A_STATES) if (TRANSITIONS[s].length > 0) transitions[s] = [...TRANSITIONS[s]];
  transitions["submitted"] = [HELD, ...TRANSITIONS.submitted];
  transitions[HELD] = [...TRANSITIONS.submitted];
  return {
    states: [...A2A_STATES, HELD],
    initial: "submitted",
    transitions,
    terminal: [...TERMINAL_STATES],
    claim: {
      from: "submitted", to: HELD, ttl_ms: claim.ttlMs ?? 30_000, reclaim_to: "submitted",
      max_attempts: claim.maxAttempts ?? 5, exhausted: "failed",
    },
  };
}

const toBoard: Partial<Record<TaskState, A2AState>> = {
  [TaskState.TASK_STATE_SUBMITTED]: "submitted",
  [TaskState.TASK_STATE_WORKING]: "working",
  [TaskState.TASK_STATE_INPUT_REQUIRED]: "input-required",
  [TaskState.TASK_STATE_AUTH_REQUIRED]: "auth-required",
  [TaskState.TASK_STATE_COMPLETED]: "completed",
  [TaskState.TASK_STATE_CANCELED]: "canceled",
  [TaskState.TASK_STATE_FAILED]: "failed",
  [TaskState.TASK_STATE_REJECTED]: "rejected",
};

/** The board state of a task state; an unset, unspecified or unrecognized state is `unknown`. */
export function boardState(state: TaskState | undefined): A2AState {
  return (state === undefined ? undefined : toBoard[state]) ?? "unknown";
}

/**
 * Defines the board's machine (an admin token's client: PUT /v1/boards is admin),
 * or checks that an existing board already has it. An operator step, like a
 * database migration: replicas with runtime tokens then only read and write records.
 */
export async function defineTaskBoard(admin: Client, board: string, claim: { ttlMs?: number; maxAttempts?: number } = {}): Promise<void> {
  const want = boardDefinition(claim);
  let revision = 0;
  try {
    const have = await admin.getBoard(board);
    if (sameMachine(have, want)) return;
    revision = have.revision;
  } catch (e) {
    if (!(e instanceof BoardNotFoundError)) throw e;
  }
  await admin.putBoard(board, want, revision);
}

/** Throws BoardMachineError unless the board exists with the A2A machine. */
export async function checkTaskBoard(client: Client, board: string): Promise<void> {
  let have;
  try {
    have = await client.getBoard(board);
  } catch (e) {
    if (e instanceof BoardNotFoundError) throw new BoardMachineError(board, "the board does not exist; define it with defineTaskBoard (an admin token)");
    throw e;
  }
  if (!sameMachine(have, boardDefinition())) {
    throw new BoardMachineError(board, `the board's states are ${have.states.join(", ")}, not the A2A machine; define it with defineTaskBoard`);
  }
}

function sameMachine(have: { states: string[]; initial: string; transitions: Record<string, string[]>; terminal: string[] }, want: ReturnType<typeof boardDefinition>): boolean {
  const set = (a: readonly string[]): string => [...a].sort().join(",");
  if (set(have.states) !== set(want.states) || have.initial !== want.initial || set(have.terminal) !== set(want.terminal)) return false;
  for (const s of want.states) if (set(have.transitions[s] ?? []) !== set(want.transitions[s] ?? [])) return false;
  return true;
}

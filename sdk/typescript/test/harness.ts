// Starts real promptd processes for the tests: the binary is PROMPTD_BIN or
// built once from the repository (go build ./cmd/promptd) into a temp dir.

import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";
import { Client } from "../src/index.js";
import type { PromptConfig } from "../src/index.js";

const here = dirname(fileURLToPath(import.meta.url));
/** The repository root (sdk/typescript/dist/test -> ../../../..). */
export const repoRoot = resolve(here, "..", "..", "..", "..");
export const ADMIN_SECRET = "admin-secret-0123456789";
export const RUNTIME_SECRET = "runtime-secret-0123456789";

let built: string | undefined;
export function promptdBinary(): string {
  if (process.env["PROMPTD_BIN"]) return process.env["PROMPTD_BIN"];
  if (built) return built;
  const out = join(tmpdir(), "promptd-ts-sdk-bin", "promptd");
  // One build per test process; go's build cache makes a rebuild cheap.
  execFileSync("go", ["build", "-o", out, "./cmd/promptd"], { cwd: repoRoot, stdio: ["ignore", "inherit", "inherit"] });
  built = out;
  return out;
}

export interface Promptd {
  url: string;
  admin: Client;
  runtime: Client;
  stop(): Promise<void>;
  /** SIGSTOP / SIGCONT. */
  pause(): void;
  resume(): void;
  log(): string;
}

export async function startPromptd(vars: Record<string, string> = {}): Promise<Promptd> {
  const dataDir = mkdtempSync(join(tmpdir(), "promptd-ts-data-"));
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("PROMPTD_")) env[k] = v;
  Object.assign(env, {
    PROMPTD_ADDR: "127.0.0.1:0",
    PROMPTD_DATA_DIR: dataDir,
    PROMPTD_TOKENS: `admin:admin:${ADMIN_SECRET},rt:runtime:${RUNTIME_SECRET}`,
  }, vars);
  const child: ChildProcess = spawn(promptdBinary(), [], { env, stdio: ["ignore", "pipe", "pipe"] });
  let logText = "";
  child.stderr?.on("data", (b: Buffer) => { logText = (logText + b.toString()).slice(-8000); });
  const addr = await new Promise<string>((res, rej) => {
    const t = setTimeout(() => rej(new Error("promptd did not listen within 60s: " + logText)), 60_000);
    const rl = createInterface({ input: child.stdout! });
    rl.on("line", (line) => {
      logText = (logText + line + "\n").slice(-8000);
      try {
        const j = JSON.parse(line) as { msg?: string; addr?: string };
        if (j.msg === "listening" && j.addr) { clearTimeout(t); res(j.addr); }
      } catch { /* not JSON */ }
    });
    child.on("exit", (code) => { clearTimeout(t); rej(new Error(`promptd exited (${code}) before listening: ${logText}`)); });
  });
  const url = "http://" + addr;
  return {
    url,
    admin: new Client({ baseUrl: url, token: ADMIN_SECRET }),
    runtime: new Client({ baseUrl: url, token: RUNTIME_SECRET }),
    log: () => logText,
    pause: () => { child.kill("SIGSTOP"); },
    resume: () => { child.kill("SIGCONT"); },
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGCONT");
        const done = new Promise((r) => child.once("exit", r));
        child.kill("SIGKILL");
        await done;
      }
      if (existsSync(dataDir)) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Publishes config as the agent's next version and points env at it. */
export async function publish(admin: Client, agent: string, env: string, config: PromptConfig): Promise<number> {
  let base = 0;
  try { base = (await admin.listVersions(agent)).items[0]?.version ?? 0; } catch { base = 0; }
  const v = await admin.createVersion(agent, { baseVersion: base, config, message: "test" });
  let rev = 0;
  try { rev = (await admin.getEnv(agent, env)).revision; } catch { rev = 0; }
  await admin.putEnv(agent, env, v.version, rev);
  return v.version;
}

/** True when integration tests must run (fail, not skip). */
export const requireIntegration = process.env["PROMPTD_REQUIRE_INTEGRATION"] === "1";

let seq = 0;
export function uniq(prefix: string): string {
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${++seq}`;
}

// Starts real promptd processes for the tests of promptd's TypeScript
// packages (the client and the framework integrations): the binary is
// PROMPTD_BIN or built once from the repository (go build ./cmd/promptd)
// into a temp dir. Each process gets its own data dir (SQLite, embedded
// defaults) unless vars point it elsewhere, an admin and a runtime token.

import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";

const here = dirname(fileURLToPath(import.meta.url));
/** The repository root (integrations/testkit/dist -> ../../..). */
export const repoRoot = resolve(here, "..", "..", "..");
/** The admin token's secret of every promptd started here. */
export const ADMIN_SECRET = "admin-secret-0123456789";
/** The runtime token's secret of every promptd started here. */
export const RUNTIME_SECRET = "runtime-secret-0123456789";

let built: string | undefined;

/** The promptd binary: PROMPTD_BIN, or one build per test process. */
export function promptdBinary(): string {
  const fromEnv = process.env["PROMPTD_BIN"];
  if (fromEnv) return fromEnv;
  if (built) return built;
  const out = join(tmpdir(), `promptd-testkit-bin-${process.pid}`, "promptd");
  // go's build cache makes a rebuild cheap.
  execFileSync("go", ["build", "-o", out, "./cmd/promptd"], { cwd: repoRoot, stdio: ["ignore", "inherit", "inherit"] });
  built = out;
  return out;
}

/** A running promptd process. */
export interface PromptdProcess {
  /** http://127.0.0.1:PORT */
  url: string;
  adminToken: string;
  runtimeToken: string;
  /** Kills the process (SIGKILL) and removes its data dir. */
  stop: () => Promise<void>;
  /** SIGSTOP: the process stops answering, its leases run out. */
  pause: () => void;
  /** SIGCONT. */
  resume: () => void;
  /** The last 8,000 characters of its output. */
  log: () => string;
}

/**
 * Starts promptd on a free 127.0.0.1 port and waits until it listens.
 * vars are extra PROMPTD_* settings (PROMPTD_ADDR, PROMPTD_DATA_DIR and
 * PROMPTD_TOKENS have defaults; the caller's PROMPTD_* environment is not
 * inherited).
 */
export async function startPromptd(vars: Record<string, string> = {}): Promise<PromptdProcess> {
  const dataDir = mkdtempSync(join(tmpdir(), "promptd-testkit-data-"));
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
    const t = setTimeout(() => { rej(new Error("promptd did not listen within 60s: " + logText)); }, 60_000);
    const stdout = child.stdout;
    if (!stdout) { clearTimeout(t); rej(new Error("promptd has no stdout")); return; }
    const rl = createInterface({ input: stdout });
    rl.on("line", (line) => {
      logText = (logText + line + "\n").slice(-8000);
      try {
        const j = JSON.parse(line) as { msg?: string; addr?: string };
        if (j.msg === "listening" && j.addr) { clearTimeout(t); res(j.addr); }
      } catch { /* not JSON */ }
    });
    child.on("exit", (code) => { clearTimeout(t); rej(new Error(`promptd exited (${String(code)}) before listening: ${logText}`)); });
  });
  return {
    url: "http://" + addr,
    adminToken: ADMIN_SECRET,
    runtimeToken: RUNTIME_SECRET,
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

/** True when integration tests must run (fail, not skip): test.sh sets it. */
export const requireIntegration = process.env["PROMPTD_REQUIRE_INTEGRATION"] === "1";

let seq = 0;
/** A name unique to this process and call: prefix-pid-time-n. */
export function uniq(prefix: string): string {
  return `${prefix}-${String(process.pid)}-${Date.now().toString(36)}-${String(++seq)}`;
}

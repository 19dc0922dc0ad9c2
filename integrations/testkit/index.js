// Starts real promptd processes for the tests of promptd's TypeScript
// packages (the client and the framework integrations): the binary is
// PROMPTD_BIN or built once from the repository (go build ./cmd/promptd)
// into a temp dir. Each process gets its own data dir (SQLite, embedded
// defaults) unless vars point it elsewhere, an admin and a runtime token.
//
// Plain JavaScript with its types in index.d.ts: the package has no
// dependencies and no build step, so its users (file: devDependencies)
// need nothing installed or built here.

import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = resolve(here, "..", "..");
export const ADMIN_SECRET = "admin-secret-0123456789";
export const RUNTIME_SECRET = "runtime-secret-0123456789";

let built;

export function promptdBinary() {
  const fromEnv = process.env["PROMPTD_BIN"];
  if (fromEnv) return fromEnv;
  if (built) return built;
  const out = join(tmpdir(), `promptd-testkit-bin-${process.pid}`, "promptd");
  // go's build cache makes a rebuild cheap.
  execFileSync("go", ["build", "-o", out, "./cmd/promptd"], { cwd: repoRoot, stdio: ["ignore", "inherit", "inherit"] });
  built = out;
  return out;
}

export async function startPromptd(vars = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), "promptd-testkit-data-"));
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("PROMPTD_")) env[k] = v;
  Object.assign(env, {
    PROMPTD_ADDR: "127.0.0.1:0",
    PROMPTD_DATA_DIR: dataDir,
    PROMPTD_TOKENS: `admin:admin:${ADMIN_SECRET},rt:runtime:${RUNTIME_SECRET}`,
  }, vars);
  const child = spawn(promptdBinary(), [], { env, stdio: ["ignore", "pipe", "pipe"] });
  let logText = "";
  child.stderr?.on("data", (b) => { logText = (logText + b.toString()).slice(-8000); });
  const addr = await new Promise((res, rej) => {
    const t = setTimeout(() => { rej(new Error("promptd did not listen within 60s: " + logText)); }, 60_000);
    const stdout = child.stdout;
    if (!stdout) { clearTimeout(t); rej(new Error("promptd has no stdout")); return; }
    const rl = createInterface({ input: stdout });
    rl.on("line", (line) => {
      logText = (logText + line + "\n").slice(-8000);
      try {
        const j = JSON.parse(line);
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

export const requireIntegration = process.env["PROMPTD_REQUIRE_INTEGRATION"] === "1";

let seq = 0;
export function uniq(prefix) {
  return `${prefix}-${String(process.pid)}-${Date.now().toString(36)}-${String(++seq)}`;
}

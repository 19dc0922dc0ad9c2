/** The repository root (integrations/testkit -> ../..). */
export declare const repoRoot: string;
/** The admin token's secret of every promptd started here. */
export declare const ADMIN_SECRET = "admin-secret-0123456789";
/** The runtime token's secret of every promptd started here. */
export declare const RUNTIME_SECRET = "runtime-secret-0123456789";
/** The promptd binary: PROMPTD_BIN, or one build per test process. */
export declare function promptdBinary(): string;
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
export declare function startPromptd(vars?: Record<string, string>): Promise<PromptdProcess>;
/** True when integration tests must run (fail, not skip): test.sh sets it. */
export declare const requireIntegration: boolean;
/** A name unique to this process and call: prefix-pid-time-n. */
export declare function uniq(prefix: string): string;

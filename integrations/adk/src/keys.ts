// Names: the promptd sessions that hold app: and user: state, and the
// promptd state-entry keys that hold ADK state keys (any string) within
// promptd's identifier rules (1..128 of [A-Za-z0-9._-], first alphanumeric).

import { createHash } from "node:crypto";

const ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Session ids with these prefixes hold app/user state; ADK sessions may not use them. */
export const APP_SCOPE_PREFIX = "adk-app.";
export const USER_SCOPE_PREFIX = "adk-user.";

function sha(s: string): string {
  return createHash("sha256").update(s, "utf8").digest("hex");
}

/** Whether s is a valid promptd identifier. */
export function isPromptdId(s: string): boolean {
  return ID.test(s);
}

/** Whether a promptd session id is one of the scope sessions (not an ADK session). */
export function isScopeSessionId(id: string): boolean {
  return id.startsWith(APP_SCOPE_PREFIX) || id.startsWith(USER_SCOPE_PREFIX);
}

/** The promptd session holding an app's `app:` state. */
export function appScopeId(appName: string): string {
  return APP_SCOPE_PREFIX + sha(appName).slice(0, 40);
}

/** The promptd session holding one user's `user:` state within an app. */
export function userScopeId(appName: string, userId: string): string {
  // Length-prefixed, so ("a", "bc") and ("ab", "c") differ.
  return USER_SCOPE_PREFIX + sha(`${appName.length}:${appName}${userId}`).slice(0, 40);
}

/**
 * The state-entry key for an ADK key (without its prefix): `k.` and its
 * base64url when that fits in 128 characters, else `h.` and its SHA-256.
 * The entry's value carries the original key, so both decode.
 */
export function entryKey(key: string): string {
  const b = "k." + Buffer.from(key, "utf8").toString("base64url");
  return b.length <= 128 ? b : "h." + sha(key);
}

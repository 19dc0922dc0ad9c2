export { PromptdSession, type PromptdSessionOptions, type HoldOptions } from "./session.js";
export { SessionHold } from "./hold.js";
export { PromptdSessionError, SessionConflictError, SessionBusyError, SessionLeaseLostError } from "./errors.js";
export { META_KEY } from "./turns.js";

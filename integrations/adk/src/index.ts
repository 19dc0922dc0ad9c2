// @promptd/adk: Google ADK's session service on promptd sessions.

export { PromptdSessionService, type PromptdSessionServiceOptions } from "./service.js";
export { SessionConflictError, StateConflictError } from "./errors.js";
export { APP_SCOPE_PREFIX, USER_SCOPE_PREFIX, appScopeId, userScopeId } from "./keys.js";
export { LeaseHeldError, LeaseLostError } from "@promptd/client";

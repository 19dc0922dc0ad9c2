export * from "./errors.js";
export * from "./types.js";
export { Transport, TransportError, newIdempotencyKey, type CallOptions, type TransportOptions, type Request, type Answer } from "./http.js";
export {
  Client, type ClientOptions, type Assembled, type Precondition, type SessionLeaseRequest, type IntentInput, type IntentQuery,
  type RecordUpdate, type BatchInput, type BatchItemInput, type VersionInput, type ReleaseInput, type RampInput, type TransitionInput,
  type SessionInput, type RecordInput, type RecordQuery, type SessionQuery, type PageQuery,
} from "./client.js";
export { withSessionLease, appendOptimistic, acquireHeldLease, HeldLease, type SessionLeaseOptions } from "./lease.js";
export { HeldIntent, withIntent, registerHeldIntent, type IntentOptions } from "./intent.js";
export { HeldClaim, ClaimEndedError, stepsTo, claimAndHold, withClaim, claimLoop, type ClaimOptions, type ClaimLoopOptions } from "./claim.js";
export { LocalPrompts, type LocalPromptsOptions } from "./local.js";
export { ExposureBatcher } from "./exposures.js";
export { render, bind, renderValue, checkBundleFormat, systemMessage, assemblePlain, assembleOpenAI } from "./assemble.js";
export { murmur3, bucket } from "./murmur3.js";
export { parseSSE, type SSEMessage } from "./sse.js";
export { resolveLocal, assembleLocal, cutHistory, AskServer, type LocalRequest } from "./evaluate.js";

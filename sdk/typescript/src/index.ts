export * from "./errors.js";
export * from "./types.js";
export { Transport, TransportError, newIdempotencyKey, type CallOptions, type TransportOptions, type Request, type Answer } from "./http.js";
export { Client, type ClientOptions, type Assembled, type Precondition, type SessionLeaseRequest } from "./client.js";
export { withSessionLease, appendOptimistic, type HeldLease, type SessionLeaseOptions } from "./lease.js";

export { PromptdSaver, type PromptdSaverOptions, type LeaseMode, type Holding } from "./saver.js";
export { PromptdStore, type PromptdStoreOptions, type StoreItem, type PutOptions, type ConditionalPutOperation } from "./store.js";
export { runThread, type MultitaskStrategy, type RunThreadOptions } from "./multitask.js";
export { ThreadLeaseError, ThreadBusyError, CheckpointFencedError, StoreRevisionConflictError, type ThreadLeaseCode } from "./errors.js";

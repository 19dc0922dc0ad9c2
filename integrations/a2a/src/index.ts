export { PromptdTaskStore, type PromptdTaskStoreOptions } from "./store.js";
export {
  A2A_STATES, HELD, TERMINAL_STATES, TRANSITIONS, allows, a2aState, boardDefinition, boardState, defineTaskBoard, checkTaskBoard, type A2AState,
} from "./machine.js";
export { TaskStoreError, IllegalTransitionError, TaskConflictError, TaskHeldError, BoardMachineError } from "./errors.js";
export { mergeTask, canon } from "./merge.js";

export interface PromptdStoreOptions { x?: number }
export type StoreItem = object;
export type PutOptions = object;
export type ConditionalPutOperation = object;
export class PromptdStore {}

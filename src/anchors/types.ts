/**
 * The types of usage anchors that the `anchors` options of the proxy and
 * `budgetedFetch` name, re-exported by those entries.
 *
 * @module
 */
export type {
  AnchorMatch,
  AnchorStore,
  AnchorStoreOptions,
  ConversationKeys,
} from "./store.ts";
export type { Usage } from "./usage.ts";

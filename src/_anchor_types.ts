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
} from "./_anchors.ts";
export type { Usage } from "./_usage.ts";

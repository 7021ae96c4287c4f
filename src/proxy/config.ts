/**
 * The proxy's settings: its upstream, the model it budgets, what it does
 * when the budget runs out, its timeouts toward the upstream and its own
 * endpoints.
 *
 * @module
 */
import type { SettingsOf } from "../_internal/setting.ts";
import {
  fraction,
  headerValue,
  httpUrl,
  oneOf,
  seconds,
  text,
} from "../_internal/setting_parsers.ts";

/** The proxy's part of the configuration. */
export type ProxyConfig = {
  readonly upstreamUrl?: string;
  readonly model?: string;
  readonly onExhausted: "clamp" | "reject" | "unchanged";
  readonly anchorTolerance: number;
  readonly upstreamTimeoutSeconds: number;
  readonly upstreamIdleTimeoutSeconds: number;
  readonly adminToken?: string;
  readonly contextEndpoint: boolean;
  readonly checkChat: boolean;
};

/** The proxy's settings, by the property each one sets. */
export const PROXY_SETTINGS: SettingsOf<ProxyConfig> = {
  upstreamUrl: {
    variable: "INCONTEXT_UPSTREAM_URL",
    flag: "--upstream URL",
    shownDefault: "none (required)",
    doc: "the upstream server root, an http(s) URL",
    parse: httpUrl,
  },
  model: {
    variable: "INCONTEXT_BUDGET_MODEL",
    alias: "INCONTEXT_MODEL",
    flag: "--model NAME",
    doc:
      "the only model the proxy server budgets (an `extra_body.model` wins); unset, every one",
    parse: text,
  },
  onExhausted: {
    variable: "INCONTEXT_ON_EXHAUSTED",
    flag: "--on-exhausted POLICY",
    default: "clamp",
    doc:
      "what it does when less than R is left: `clamp`, `reject` or `unchanged`",
    parse: oneOf(
      ["clamp", "reject", "unchanged"],
      "must be clamp, reject or unchanged",
    ),
  },
  anchorTolerance: {
    variable: "INCONTEXT_ANCHOR_TOLERANCE",
    default: 0.02,
    doc:
      "how far a count may differ from its anchor before it is logged (`0.02`, `2%`)",
    parse: fraction,
  },
  upstreamTimeoutSeconds: {
    variable: "INCONTEXT_UPSTREAM_TIMEOUT_SECONDS",
    default: 600,
    doc:
      "how long the upstream may take to send response headers, then 504; bounds a non-streamed generation",
    parse: seconds,
  },
  upstreamIdleTimeoutSeconds: {
    variable: "INCONTEXT_UPSTREAM_IDLE_TIMEOUT_SECONDS",
    default: 600,
    doc: "how long a response body may wait for the upstream's next bytes",
    parse: seconds,
  },
  adminToken: {
    variable: "INCONTEXT_ADMIN_TOKEN",
    doc:
      "when set, `/incontext/metrics`, `/context` and the page need it (bearer or Basic password)",
    parse: headerValue,
  },
  contextEndpoint: {
    variable: "INCONTEXT_CONTEXT_ENDPOINT",
    default: true,
    doc:
      "`off` answers 404 on `/incontext/context` (recent decisions, model names)",
    parse: (value) =>
      value === "on" || value === "off"
        ? { value: value === "on", rules: [] }
        : { rules: ["must be on or off"] },
  },
  checkChat: {
    variable: "INCONTEXT_CHECK_CHAT",
    flag: "--check-chat on|off",
    default: false,
    doc:
      "`on`: `incontext check` also sends one chat (`max_tokens: 1`) upstream and compares its `usage.prompt_tokens` with the count",
    parse: (value) =>
      value === "on" || value === "off"
        ? { value: value === "on", rules: [] }
        : { rules: ["must be on or off"] },
  },
};

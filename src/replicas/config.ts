/**
 * The settings of the store replicas share: where it is, how its
 * certificate and its records are checked, how long a record lives and how
 * long one call may take.
 *
 * @module
 */
import type { Parse, SettingsOf } from "../_internal/setting.ts";
import {
  broken,
  integer,
  ok,
  refine,
  seconds,
  text,
} from "../_internal/setting_parsers.ts";

// Only the rule is reported: the URL may carry a password.
const redisUrl: Parse<string> = (value) => {
  const rule = checkRedisUrl(value);
  return rule === undefined ? ok(value) : broken(rule);
};

/** redis:// or rediss:// with a host, an optional port and database number. */
function checkRedisUrl(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "must be a redis:// or rediss:// URL";
  }
  if (url.protocol !== "redis:" && url.protocol !== "rediss:") {
    return "must be a redis:// or rediss:// URL";
  }
  if (url.hostname === "") return "must name a host";
  if (url.search !== "" || url.hash !== "") {
    return "must not have a query or a fragment";
  }
  const db = url.pathname.replace(/^\//, "");
  if (db !== "" && !/^\d+$/.test(db)) {
    return "must end in a database number, such as /0";
  }
  return undefined;
}

/** The shared store's part of the configuration. */
export type ReplicaConfig = {
  readonly sharedStore?: string;
  readonly sharedStoreCa?: string;
  readonly sharedStoreSecret?: string;
  readonly sharedTtlSeconds: number;
  readonly sharedTimeoutMs: number;
};

/** The shared store's settings, by the property each one sets. */
export const REPLICA_SETTINGS: SettingsOf<ReplicaConfig> = {
  sharedStore: {
    variable: "INCONTEXT_SHARED_STORE",
    doc:
      "a `redis://` or `rediss://` URL replicas share anchors and counts through; a secret",
    parse: redisUrl,
  },
  sharedStoreCa: {
    variable: "INCONTEXT_SHARED_STORE_CA",
    doc:
      "a PEM file of the CAs a `rediss://` store's certificate is checked against",
    parse: text,
  },
  sharedStoreSecret: {
    variable: "INCONTEXT_SHARED_STORE_SECRET",
    doc:
      "a secret (32+ characters) replicas sign and check every shared record with",
    parse: (value) =>
      value.length >= 32 ? ok(value) : broken(
        "must be at least 32 characters, such as the output of openssl rand -hex 32",
      ),
  },
  sharedTtlSeconds: {
    variable: "INCONTEXT_SHARED_TTL_SECONDS",
    default: 86400,
    doc: "how long a shared record lives in the store",
    parse: seconds,
  },
  sharedTimeoutMs: {
    variable: "INCONTEXT_SHARED_TIMEOUT_MS",
    default: 5,
    doc:
      "the deadline of one shared-store call; past it, the replica's own layer",
    parse: refine(
      integer(1),
      (n) => n <= 60_000,
      "must be at most 60000 milliseconds",
    ),
  },
};

/**
 * The Portkey AI gateway (`@portkey-ai/gateway` from npm, TypeScript on
 * Hono) as its own process, the peer of the separate-process benchmarks:
 *
 *     deno run -A bench/_portkey_gateway.ts --port=PORT --headless
 *
 * @module
 */
import "@portkey-ai/gateway/build/start-server.js";

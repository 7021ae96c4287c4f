/**
 * Why a server could not listen, in words a user acts on.
 *
 * @module
 */

/**
 * The reason a server could not listen, from its error: `Deno.serve`'s
 * error classes, or `node:net`'s error codes.
 */
export function listenProblem(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (error instanceof Deno.errors.AddrInUse || code === "EADDRINUSE") {
    return "the address is in use";
  }
  if (
    error instanceof Deno.errors.AddrNotAvailable || code === "EADDRNOTAVAIL"
  ) {
    return "the address is not one of this machine's";
  }
  if (error instanceof Deno.errors.PermissionDenied || code === "EACCES") {
    return "permission denied (a port below 1024 needs privileges)";
  }
  return error instanceof Error ? error.name : typeof error;
}

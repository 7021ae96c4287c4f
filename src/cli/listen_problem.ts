/**
 * Why a server could not listen, in words a user acts on.
 *
 * @module
 */

/** The reason `Deno.serve` could not listen, from its error. */
export function listenProblem(error: unknown): string {
  if (error instanceof Deno.errors.AddrInUse) return "the address is in use";
  if (error instanceof Deno.errors.AddrNotAvailable) {
    return "the address is not one of this machine's";
  }
  if (error instanceof Deno.errors.PermissionDenied) {
    return "permission denied (a port below 1024 needs privileges)";
  }
  return error instanceof Error ? error.name : typeof error;
}

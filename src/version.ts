/** The package version; a test keeps it equal to the `version` in `deno.json`. */
export const VERSION = "0.1.0";

/** Process exit codes of the CLI: 0 success, 1 the operation failed, 2 usage or configuration error. */
export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

/** A command's exit codes with their meanings, as its --help prints them (server/commands/help.ts). */
export type ExitCodes = readonly (readonly [number, string])[];

export function exitCodesLine(codes: ExitCodes): string {
  return `exit codes: ${codes.map(([code, meaning]) => `${code} ${meaning}`).join("; ")}`;
}

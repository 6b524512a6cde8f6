/** Process exit codes of the CLI: 0 success, 1 the operation failed, 2 usage or configuration error. */
export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

// The forge's configuration directory in a repository (`.forge` by default, `.github` on GitHub): where the first code-owners
// location and the protected workflow and action directories are. An input value of the decision core, never read from the
// environment here: the service takes it from SERVICE_FORGE_DIRECTORY, `service validate` from --forge-directory, the
// playground from its settings.

export const DEFAULT_FORGE_DIRECTORY = ".forge";
export const MAX_FORGE_DIRECTORY_LENGTH = 100;

/**
 * Why `value` cannot be a forge directory, or null when it can: a single path segment starting with `.`, not `.` or `..`,
 * made of letters, digits, `.`, `-` and `_` (so that it is also a repository name, the organization policy repository's
 * default, and never a CODEOWNERS wildcard or escape), at most MAX_FORGE_DIRECTORY_LENGTH characters.
 */
export function forgeDirectoryProblem(value: string): string | null {
  if (value === "") return "must not be empty";
  if (value.length > MAX_FORGE_DIRECTORY_LENGTH) return `must be at most ${MAX_FORGE_DIRECTORY_LENGTH} characters`;
  if (/[/\\]/.test(value)) return "must be a single directory name (no '/' or '\\')";
  if (!value.startsWith(".")) return "must start with '.' (for example .forge or .github)";
  if (value === "." || value === "..") return "must name a directory, not '.' or '..'";
  if (!/^[A-Za-z0-9._-]+$/.test(value)) return "may contain only letters, digits, '.', '-' and '_'";
  return null;
}

/** The three code-owners locations in precedence order: `<dir>/CODEOWNERS`, `CODEOWNERS`, `docs/CODEOWNERS`. */
export function codeownersLocations(forgeDirectory: string): readonly string[] {
  return [`${forgeDirectory}/CODEOWNERS`, "CODEOWNERS", "docs/CODEOWNERS"];
}

/** The forge directory's protected parts of the built-in non-delegable set: its workflows and actions. */
export function forgeDirectoryNonDelegablePatterns(forgeDirectory: string): readonly string[] {
  return [`/${forgeDirectory}/workflows/**`, `/${forgeDirectory}/actions/**`];
}

/** SERVICE_POLICY_PATH's default: `<dir>/service-policy.toml`. */
export function defaultPolicyPath(forgeDirectory: string): string {
  return `${forgeDirectory}/service-policy.toml`;
}

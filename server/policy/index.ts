// Public surface of the pure policy layer (browser-safe: no Bun, Node, database, forge or clock imports).
export * from "./bounds.ts";
export { parseCodeowners, ownerKind, type CodeownersError, type CodeownersMatch, type CodeownersRule, type OwnerKind, type ParsedCodeowners } from "./codeowners.ts";
export { MatchBudget, MatchBudgetExceeded } from "./match-budget.ts";
export { compilePattern, literalPathPattern, type CompiledPattern, type PatternResult } from "./pattern.ts";
export { nonDelegableSet, builtInNonDelegablePatterns, type NonDelegableSet } from "./non-delegable.ts";
export { codeownersLocations, defaultPolicyPath, DEFAULT_FORGE_DIRECTORY, forgeDirectoryNonDelegablePatterns, forgeDirectoryProblem, MAX_FORGE_DIRECTORY_LENGTH } from "./forge-directory.ts";
export {
  breakGlassSettings,
  parseOrganizationPolicy,
  parseRepositoryPolicy,
  REPOSITORY_BREAK_GLASS_MESSAGE,
  repositoryPolicyOptsOut,
  OrganizationPolicySchema,
  RepositoryPolicySchema,
  type OrganizationPolicy,
  type RepositoryPolicy,
  type PolicyError,
  type PolicyParse,
  type BreakGlassSettings,
} from "./policy-files.ts";
export { decodeUtf8Strict, utf8ByteLength } from "./utf8.ts";
export { validate, LISTED_PATHS, type Finding, type FindingKind, type Severity, type ValidatedFile, type ValidationInput, type ValidationReport, type ValidationSummary } from "./validate.ts";

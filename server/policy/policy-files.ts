// Organization and repository policy files (DESIGN 3.1): TOML parsed with smol-toml, validated strictly with TypeBox
// (unknown fields, wrong types and out-of-range values rejected), bounded to MAX_POLICY_FILE_BYTES, `schema_version = 1`.
// Every error carries a location: TOML line/column for syntax errors, a field path (`delegations[0].app`) otherwise.
// Cross-file rules (a delegation's App must be enrolled by the organization) are checked in evaluate(), which sees both.
import { Type, type Static, type TSchema } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { parse as parseToml, TomlError } from "smol-toml";
import {
  DEFAULT_BREAK_GLASS_REASON_LENGTH,
  MAX_BREAK_GLASS_REASON_LENGTH,
  MAX_BREAK_GLASS_TEAMS,
  MAX_DELEGATION_PATTERNS,
  MAX_DELEGATIONS,
  MAX_GUARDRAIL_PATTERNS,
  MAX_POLICY_FILE_BYTES,
  MAX_REQUIRED_APPROVALS,
  MAX_TEAM_SLUG_CHARS,
  MAX_TRUSTED_APPS,
  MIN_BREAK_GLASS_REASON_LENGTH,
  MIN_REQUIRED_APPROVALS,
} from "./bounds.ts";
import { ownerKind } from "./codeowners.ts";
import { compilePattern } from "./pattern.ts";
import { utf8ByteLength } from "./utf8.ts";

export interface PolicyError {
  /** `line 3, column 7` for TOML syntax, a field path such as `delegations[0].paths[1]` for schema errors, `file` otherwise. */
  readonly location: string;
  readonly message: string;
}

const Slug = Type.String({ pattern: "^[a-z0-9][a-z0-9-]{0,99}$" });
const Pattern = Type.String({ minLength: 1, maxLength: 4096 });
/** A team slug of the organization (lower case, as the forge makes them), without `org/`: `sre-on-call`. */
const TeamSlug = Type.String({ pattern: `^[a-z0-9][a-z0-9_-]{0,${MAX_TEAM_SLUG_CHARS - 1}}$` });
const strict = { additionalProperties: false } as const;

export const OrganizationPolicySchema = Type.Object(
  {
    schema_version: Type.Literal(1),
    trusted_apps: Type.Optional(
      Type.Array(Type.Object({ slug: Slug, app_id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }) }, strict), {
        maxItems: MAX_TRUSTED_APPS,
      }),
    ),
    guardrails: Type.Optional(
      Type.Object({ non_delegable_paths: Type.Optional(Type.Array(Pattern, { maxItems: MAX_GUARDRAIL_PATTERNS })) }, strict),
    ),
    // DESIGN 3.11: only the organization policy enables break-glass overrides; without this section there is none.
    break_glass: Type.Optional(
      Type.Object(
        {
          teams: Type.Array(TeamSlug, { minItems: 1, maxItems: MAX_BREAK_GLASS_TEAMS }),
          min_reason_length: Type.Optional(Type.Integer({ minimum: MIN_BREAK_GLASS_REASON_LENGTH, maximum: MAX_BREAK_GLASS_REASON_LENGTH })),
        },
        strict,
      ),
    ),
  },
  strict,
);

export const RepositoryPolicySchema = Type.Object(
  {
    schema_version: Type.Literal(1),
    enabled: Type.Optional(Type.Boolean()),
    required_approvals: Type.Optional(Type.Integer({ minimum: MIN_REQUIRED_APPROVALS, maximum: MAX_REQUIRED_APPROVALS })),
    delegations: Type.Optional(
      Type.Array(
        Type.Object(
          {
            app: Slug,
            paths: Type.Array(Pattern, { minItems: 1, maxItems: MAX_DELEGATION_PATTERNS }),
            owners: Type.Optional(Type.Array(Type.String(), { minItems: 1, maxItems: 100 })),
            required_label: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
          },
          strict,
        ),
        { maxItems: MAX_DELEGATIONS },
      ),
    ),
  },
  strict,
);

export type OrganizationPolicy = Static<typeof OrganizationPolicySchema>;
export type RepositoryPolicy = Static<typeof RepositoryPolicySchema>;

export type PolicyParse<T> = { readonly kind: "ok"; readonly policy: T } | { readonly kind: "invalid"; readonly errors: readonly PolicyError[] };

/** `/delegations/0/app` → `delegations[0].app` */
function fieldPath(pointer: string): string {
  if (pointer === "") return "(top level)";
  return pointer
    .slice(1)
    .split("/")
    .map((part) => part.replace(/~1/g, "/").replace(/~0/g, "~"))
    .reduce((path, part) => (/^\d+$/.test(part) ? `${path}[${part}]` : path === "" ? part : `${path}.${part}`), "");
}

/** The error of a policy file of `bytes` UTF-8 bytes, or null when it is within MAX_POLICY_FILE_BYTES. */
export function policyFileSizeError(bytes: number): PolicyError | null {
  return bytes > MAX_POLICY_FILE_BYTES ? { location: "file", message: `policy file is ${bytes} bytes; the limit is ${MAX_POLICY_FILE_BYTES}` } : null;
}

function readToml(text: string): { ok: true; value: unknown } | { ok: false; errors: PolicyError[] } {
  const tooLarge = policyFileSizeError(utf8ByteLength(text));
  if (tooLarge !== null) return { ok: false, errors: [tooLarge] };
  try {
    return { ok: true, value: parseToml(text, { integersAsBigInt: "asNeeded", unsafeKeyBehaviour: "throw", maxDepth: 16 }) };
  } catch (error) {
    if (error instanceof TomlError) {
      const firstLine = error.message.split("\n")[0] ?? "invalid TOML";
      return { ok: false, errors: [{ location: `line ${error.line}, column ${error.column}`, message: firstLine }] };
    }
    return { ok: false, errors: [{ location: "file", message: "invalid TOML" }] };
  }
}

function schemaErrors(schema: TSchema, value: unknown): PolicyError[] {
  if (Value.Check(schema, value)) return [];
  const errors: PolicyError[] = [];
  for (const error of Value.Errors(schema, value)) {
    errors.push({ location: fieldPath(error.path), message: error.message });
    if (errors.length >= 20) break;
  }
  return errors;
}

function patternErrors(patterns: readonly string[], at: string): PolicyError[] {
  const errors: PolicyError[] = [];
  patterns.forEach((pattern, index) => {
    const compiled = compilePattern(pattern);
    if (!compiled.ok) errors.push({ location: `${at}[${index}]`, message: compiled.message });
  });
  return errors;
}

/** The organization's break-glass settings (DESIGN 3.11), or null when its policy has no `[break_glass]` section. */
export interface BreakGlassSettings {
  /** Team slugs of the organization whose active members may override. */
  readonly teams: readonly string[];
  /** Characters (code points) the reason must have after trimming. */
  readonly minReasonLength: number;
}

export function breakGlassSettings(policy: OrganizationPolicy | null): BreakGlassSettings | null {
  const section = policy?.break_glass;
  if (section === undefined) return null;
  return { teams: [...new Set(section.teams)], minReasonLength: section.min_reason_length ?? DEFAULT_BREAK_GLASS_REASON_LENGTH };
}

/** The error of a repository policy that names `break_glass`, which only the organization policy may (DESIGN 3.11). */
export const REPOSITORY_BREAK_GLASS_MESSAGE = "only the organization policy can enable break-glass overrides; a repository policy cannot enable, widen or narrow them";

export function parseOrganizationPolicy(text: string): PolicyParse<OrganizationPolicy> {
  const read = readToml(text);
  if (!read.ok) return { kind: "invalid", errors: read.errors };
  const errors = schemaErrors(OrganizationPolicySchema, read.value);
  if (errors.length > 0) return { kind: "invalid", errors };
  const policy = read.value as OrganizationPolicy;
  const seen = new Set<string>();
  (policy.trusted_apps ?? []).forEach((app, index) => {
    if (seen.has(app.slug)) errors.push({ location: `trusted_apps[${index}].slug`, message: `App '${app.slug}' is enrolled twice` });
    seen.add(app.slug);
  });
  errors.push(...patternErrors(policy.guardrails?.non_delegable_paths ?? [], "guardrails.non_delegable_paths"));
  return errors.length > 0 ? { kind: "invalid", errors } : { kind: "ok", policy };
}

export function parseRepositoryPolicy(text: string): PolicyParse<RepositoryPolicy> {
  const read = readToml(text);
  if (!read.ok) return { kind: "invalid", errors: read.errors };
  // Named before the schema's own "unexpected property", so the error says why the section is refused here.
  const namesBreakGlass = typeof read.value === "object" && read.value !== null && Object.hasOwn(read.value, "break_glass");
  const errors = [
    ...(namesBreakGlass ? [{ location: "break_glass", message: REPOSITORY_BREAK_GLASS_MESSAGE }] : []),
    ...schemaErrors(RepositoryPolicySchema, read.value).filter((error) => !(namesBreakGlass && error.location === "break_glass")),
  ];
  if (errors.length > 0) return { kind: "invalid", errors };
  const policy = read.value as RepositoryPolicy;
  (policy.delegations ?? []).forEach((delegation, index) => {
    errors.push(...patternErrors(delegation.paths, `delegations[${index}].paths`));
    (delegation.owners ?? []).forEach((owner, ownerIndex) => {
      if (ownerKind(owner) === null) {
        errors.push({ location: `delegations[${index}].owners[${ownerIndex}]`, message: `invalid owner '${owner}'` });
      }
    });
  });
  return errors.length > 0 ? { kind: "invalid", errors } : { kind: "ok", policy };
}

/**
 * Whether a repository policy text says `enabled = false` at the top level, read even when the rest of the file is invalid:
 * a repository that opted out gets no managed check, whatever else its file contains.
 */
export function repositoryPolicyOptsOut(text: string): boolean {
  const read = readToml(text);
  return read.ok && typeof read.value === "object" && read.value !== null && (read.value as { enabled?: unknown }).enabled === false;
}

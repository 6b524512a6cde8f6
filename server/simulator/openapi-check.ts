// A small JSON-schema checker for the forge's OpenAPI description: required properties, types, nullability, enums, anyOf/oneOf/allOf.
// Enough to prove the simulator's bodies carry what the published description requires; not a general validator.

export type Schema = {
  type?: string | string[]; nullable?: boolean; required?: string[]; properties?: Record<string, Schema>; items?: Schema;
  anyOf?: Schema[]; oneOf?: Schema[]; allOf?: Schema[]; enum?: unknown[];
};

export function checkSchema(schema: Schema | undefined, value: unknown, at = "$"): string[] {
  if (!schema) return [];
  if (value === null && (schema.nullable || (Array.isArray(schema.type) && schema.type.includes("null")))) return [];
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) {
    let best: string[] | null = null;
    for (const alt of alternatives) {
      const errors = checkSchema({ ...alt, nullable: alt.nullable ?? schema.nullable }, value, at);
      if (errors.length === 0) return [];
      if (!best || errors.length < best.length) best = errors;
    }
    return best ?? [];
  }
  const errors: string[] = [];
  for (const part of schema.allOf ?? []) errors.push(...checkSchema(part, value, at));
  const types = schema.type === undefined ? [] : Array.isArray(schema.type) ? schema.type : [schema.type];
  if (types.length && !types.some((t) => matchesType(t, value))) return [...errors, `${at}: expected ${types.join("|")}, got ${value === null ? "null" : typeof value}`];
  if (schema.enum && value !== null && !schema.enum.includes(value)) errors.push(`${at}: ${JSON.stringify(value)} not in enum`);
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    const o = value as Record<string, unknown>;
    for (const key of schema.required ?? []) if (o[key] === undefined) errors.push(`${at}.${key}: required`);
    for (const [key, sub] of Object.entries(schema.properties ?? {})) if (o[key] !== undefined) errors.push(...checkSchema(sub, o[key], `${at}.${key}`));
  }
  if (Array.isArray(value) && schema.items) value.slice(0, 5).forEach((item, i) => errors.push(...checkSchema(schema.items, item, `${at}[${i}]`)));
  return errors;
}

function matchesType(type: string, value: unknown): boolean {
  switch (type) {
    case "object": return typeof value === "object" && value !== null && !Array.isArray(value);
    case "array": return Array.isArray(value);
    case "string": return typeof value === "string";
    case "integer": return typeof value === "number" && Number.isInteger(value);
    case "number": return typeof value === "number";
    case "boolean": return typeof value === "boolean";
    case "null": return value === null;
    default: return true;
  }
}

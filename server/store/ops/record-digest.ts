import { DIGEST_FORMAT, memberName, RECORD_FIELDS, type RecordKind } from "../../records/tamper-evidence.ts";
import type { Dialect } from "../op.ts";

/**
 * The record digest of server/records/tamper-evidence.ts as one SQL expression, so that every statement that writes a
 * record's fields writes its digest in the same statement (no statement is added to the publication path, and no read: a
 * merge record's verdict is computed by its INSERT … SELECT). The expression builds the record's RFC 8785 bytes from the
 * values being written: members in the code-unit order of their names (all ASCII), an integer as CAST(… AS text) of a bigint
 * (PostgreSQL and SQLite both print integers as plain decimals), a flag as true or false, text quoted as JSON by the database
 * (PostgreSQL's to_json and SQLite's json_quote escape exactly as JSON.stringify does, and RFC 8785 strings are JSON.stringify's:
 * record-digest.test.ts checks both against tamper-evidence.ts), and null as null; then the hexadecimal SHA-256 of its
 * UTF-8 bytes (PostgreSQL's sha256(); on SQLite the store's sha256_hex function, SqliteStore.open).
 *
 * `value(column)` gives the SQL of each column's new value (a parameter, `excluded.x`, the row's current column …). Each
 * value is cast to its type, so that a parameter used both for the column and here gets one type on PostgreSQL.
 */
export function recordDigestSql(kind: RecordKind, dialect: Dialect, value: (column: string) => string): string {
  const members: [string, string][] = [["format", `'${DIGEST_FORMAT}'`], ["kind", `'${JSON.stringify(kind)}'`]];
  for (const [column, type] of Object.entries(RECORD_FIELDS[kind])) {
    const v = value(column);
    const json = type === "sha256"
      ? dialect === "postgresql" ? `'"' || encode(sha256(CAST(${v} AS bytea)), 'hex') || '"'` : `'"' || sha256_hex(${v}) || '"'`
      : type === "boolean"
        ? `case when CAST(${v} AS boolean) then 'true' else 'false' end`
        : type.startsWith("integer")
          ? `CAST(CAST(${v} AS bigint) AS text)`
          : dialect === "postgresql" ? `CAST(to_json(CAST(${v} AS text)) AS text)` : `json_quote(CAST(${v} AS text))`;
    members.push([memberName(column, type), type.endsWith("?") ? `coalesce(${json}, 'null')` : json]);
  }
  members.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const parts = members.map(([name, json], i) => `'${i === 0 ? "{" : ","}${JSON.stringify(name)}:' || ${json}`);
  const text = `${parts.join(" || ")} || '}'`;
  return dialect === "postgresql" ? `encode(sha256(convert_to(${text}, 'UTF8')), 'hex')` : `sha256_hex(${text})`;
}

/** The digest of the row as stored (`alias.column`), with some columns replaced by the values a statement writes. */
export function storedRecordDigestSql(kind: RecordKind, dialect: Dialect, alias: string, replaced: Readonly<Record<string, string>> = {}): string {
  return recordDigestSql(kind, dialect, (column) => replaced[column] ?? `${alias}.${column}`);
}

const built = new Map<string, string>();

/**
 * A statement that carries a digest expression, built once per key (its kind, dialect and placeholders) and reused: the
 * expressions are long and fixed, and building them on every write would cost the worker CPU on each publication.
 */
export function digestStatement(key: string, build: () => string): string {
  let sql = built.get(key);
  if (sql === undefined) {
    sql = build();
    built.set(key, sql);
  }
  return sql;
}

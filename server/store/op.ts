/**
 * One store operation, written once for both backends. An operation is a generator that yields SQL requests and receives
 * their results; the SQLite driver runs it synchronously inside one `db.transaction` (bun:sqlite transactions cannot await:
 * RECIPES 6), the PostgreSQL driver inside one transaction on one acquired connection. SQL is the portable subset both
 * dialects share (upserts with partial-index targets, RETURNING, CASE instead of least/greatest); placeholders are $1..$n.
 */
export type Row = Record<string, unknown>;
/** SQL text, or one text per backend where the dialects differ (row locking: FOR UPDATE SKIP LOCKED exists only on PostgreSQL). */
export type Sql = string | { readonly postgresql: string; readonly sqlite: string };
export type Query = { readonly sql: Sql; readonly params: readonly unknown[]; readonly mode: "one" | "all" | "run" };
export type Op<T> = Generator<Query, T, unknown>;

export function* one<T extends Row = Row>(sql: Sql, ...params: unknown[]): Generator<Query, T | null, unknown> {
  return (yield { sql, params, mode: "one" }) as T | null;
}
export function* all<T extends Row = Row>(sql: Sql, ...params: unknown[]): Generator<Query, T[], unknown> {
  return (yield { sql, params, mode: "all" }) as T[];
}
export function* run(sql: Sql, ...params: unknown[]): Generator<Query, number, unknown> {
  return (yield { sql, params, mode: "run" }) as number;
}

/** Guard taken for the whole operation: the installation publication guard, exclusive, waited for at most timeoutMs. */
export type OpOptions = { readonly exclusiveGuard?: { readonly installationId: number; readonly timeoutMs: number } };

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
/**
 * Statements sent together: each may depend on the writes of the ones before it (same transaction), never on their result
 * values in code. PostgreSQL pipelines a batch into one write and one round trip, together with the transaction's BEGIN
 * when the batch opens it and with its COMMIT when the batch is `last` (the operation then returns without another
 * statement, and must not fail after it: it is committed; an operation with a deadline sends that COMMIT on its own,
 * OpOptions); SQLite runs the statements in order. The first failing statement
 * fails the whole operation and nothing of it is kept.
 */
export type Batch = { readonly batch: readonly Query[]; readonly last: boolean };
/**
 * Asks which database runs the operation, for the rare operation whose hot path is one PostgreSQL statement (data-modifying
 * CTEs) where SQLite needs several; both branches must have the same effect, and the contract tests run each on its backend.
 */
export type DialectQuestion = { readonly dialect: true };
export type Dialect = "postgresql" | "sqlite";
export type Step = Query | Batch | DialectQuestion;
export type Op<T> = Generator<Step, T, unknown>;

/** One statement for a batch; the result it contributes follows `mode` (the row or null, the rows, the changed count). */
export function query(mode: Query["mode"], sql: Sql, ...params: unknown[]): Query {
  return { sql, params, mode };
}

export function* one<T extends Row = Row>(sql: Sql, ...params: unknown[]): Generator<Step, T | null, unknown> {
  return (yield query("one", sql, ...params)) as T | null;
}
export function* all<T extends Row = Row>(sql: Sql, ...params: unknown[]): Generator<Step, T[], unknown> {
  return (yield query("all", sql, ...params)) as T[];
}
export function* run(sql: Sql, ...params: unknown[]): Generator<Step, number, unknown> {
  return (yield query("run", sql, ...params)) as number;
}
export function* batch(queries: readonly Query[], options: { readonly last?: boolean } = {}): Generator<Step, unknown[], unknown> {
  return (yield { batch: queries, last: options.last === true }) as unknown[];
}
/**
 * An operation of one statement, sent alone: PostgreSQL runs it without BEGIN and COMMIT on the statement pool, which
 * pipelines and reserves nothing (PostgresStore.execute). Whoever holds the publication guards (a session lock on a reserved
 * connection of the transaction pool) runs only such operations: needing a second reservation from the pool whose
 * connections other guard holders and waiters hold would stall every one of them until the pool's acquisition bound.
 * Fails if `op` sends a batch or a second statement.
 */
export function* lone<T>(op: Op<T>): Op<T> {
  let step = op.next();
  while (!step.done && isDialectQuestion(step.value)) step = op.next(yield step.value);
  if (step.done) return step.value;
  const first = step.value;
  if (isBatch(first) || isDialectQuestion(first)) throw new Error("lone(): the operation is not one plain statement");
  const [result] = yield* batch([first], { last: true });
  const after = op.next(result);
  if (!after.done) throw new Error("lone(): the operation sent a second statement");
  return after.value;
}

export function* dialect(): Generator<Step, Dialect, unknown> {
  return (yield { dialect: true }) as Dialect;
}
export function isBatch(step: Step): step is Batch {
  return "batch" in step;
}
export function isDialectQuestion(step: Step): step is DialectQuestion {
  return "dialect" in step;
}

export type OpOptions = {
  /** Guard taken for the whole operation: the installation publication guard, exclusive, waited for at most timeoutMs. */
  readonly exclusiveGuard?: { readonly installationId: number; readonly timeoutMs: number };
  /**
   * When the operation must have ended, as a `performance.now()` time (a webhook's answer waits on it: issue 25). Every wait
   * (connection, guard, statement, retry) ends by then; past it the operation fails as a StoreError("timeout"). It commits
   * only while time is left: PostgreSQL sends its COMMIT alone, after every statement answered in time (not pipelined with
   * a last batch), so an operation cut short commits nothing, unless the cut comes while that COMMIT is on its way.
   */
  readonly deadline?: number;
};

/**
 * How early a guard wait cut short by an operation's deadline ends before it: time for the refusal to come back, and for the
 * few statements that follow a guard granted at the last moment.
 */
export const GUARD_DEADLINE_MARGIN_MS = 250;

/** The milliseconds left before `deadline` (a `performance.now()` time); unbounded without one. */
export function remainingMs(deadline: number | undefined): number {
  return deadline === undefined ? Number.POSITIVE_INFINITY : deadline - performance.now();
}

/** How long a guard may be waited for: its bound, or until GUARD_DEADLINE_MARGIN_MS before the deadline if that comes first. */
export function guardWaitMs(timeoutMs: number, deadline: number | undefined): number {
  return Math.min(timeoutMs, remainingMs(deadline) - GUARD_DEADLINE_MARGIN_MS);
}

import { type HeldWork, releaseHeldWork, type Store } from "../store/index.ts";

/**
 * The releases of fast paths that end together go to the database together (issue 26 item 8): one release is sent at once;
 * those that come while it is on its way wait for it and then go as one statement (releaseHeldWork), as a group commit
 * does. At low load every release is sent alone and waits for nothing; under load, when the forge cannot be reached and
 * every fast path fails, a delivery costs the database its acceptance and a share of one statement instead of two.
 *
 * Best effort, as every release is: a failed one leaves rows to run when they were held until, at most the fast path's
 * deadline. Nobody waits for it before answering (handle-webhook.ts); its statement is bounded by the latest deadline of
 * its group.
 */
export const MAX_RELEASES_PER_STATEMENT = 200;

type Waiting = { readonly work: HeldWork; readonly deadline: number; readonly done: () => void };

/** `release` resolves once the statement carrying it ended (released, or failed), at once when its deadline has passed. */
export type ReleaseBatcher = { release(work: HeldWork, deadline: number): Promise<void> };

export function createReleaseBatcher(store: Store, now: () => number): ReleaseBatcher {
  let waiting: Waiting[] = [];
  let sending = false;
  const send = async () => {
    sending = true;
    try {
      while (waiting.length > 0) {
        const group = waiting.slice(0, MAX_RELEASES_PER_STATEMENT);
        waiting = waiting.slice(group.length);
        const deadline = Math.max(...group.map((w) => w.deadline));
        await store.execute(() => releaseHeldWork(group.map((w) => w.work), now()), { deadline }).catch(() => {});
        for (const w of group) w.done();
      }
    } finally {
      sending = false;
    }
  };
  return {
    release(work, deadline) {
      if (deadline - performance.now() <= 0) return Promise.resolve();
      return new Promise<void>((resolve) => {
        waiting.push({ work, deadline, done: resolve });
        if (!sending) void send();
      });
    },
  };
}

const batchers = new WeakMap<Store, ReleaseBatcher>();

/** The process's batcher for `store` (every webhook of a process shares its store). */
export function releaseBatcherFor(store: Store, now: () => number): ReleaseBatcher {
  let batcher = batchers.get(store);
  if (batcher === undefined) {
    batcher = createReleaseBatcher(store, now);
    batchers.set(store, batcher);
  }
  return batcher;
}

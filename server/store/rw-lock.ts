import { StoreError } from "./store.ts";

/**
 * In-process read/write lock per key: the SQLite stand-in for the PostgreSQL installation publication guard (advisory locks,
 * shared for check writes, exclusive for authority acceptance: DESIGN 4). FIFO, so a waiting writer is not starved by a
 * stream of readers. Only meaningful within one process, which is all the embedded database supports.
 */
type Waiter = { exclusive: boolean; grant: () => void };
type State = { readers: number; writer: boolean; queue: Waiter[] };

export class RwLock {
  private states = new Map<string, State>();

  acquireShared(key: string, timeoutMs: number): Promise<() => void> {
    return this.acquire(key, false, timeoutMs);
  }

  acquireExclusive(key: string, timeoutMs: number): Promise<() => void> {
    return this.acquire(key, true, timeoutMs);
  }

  private state(key: string): State {
    let state = this.states.get(key);
    if (!state) this.states.set(key, (state = { readers: 0, writer: false, queue: [] }));
    return state;
  }

  private acquire(key: string, exclusive: boolean, timeoutMs: number): Promise<() => void> {
    const state = this.state(key);
    const release = () => {
      if (exclusive) state.writer = false;
      else state.readers -= 1;
      this.drain(key, state);
    };
    const free = exclusive ? !state.writer && state.readers === 0 : !state.writer;
    if (free && state.queue.length === 0) {
      if (exclusive) state.writer = true;
      else state.readers += 1;
      return Promise.resolve(once(release));
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        exclusive,
        grant: () => {
          clearTimeout(timer);
          resolve(once(release));
        },
      };
      const timer = setTimeout(() => {
        state.queue.splice(state.queue.indexOf(waiter), 1);
        this.drain(key, state);
        reject(new StoreError("guard_timeout", "the publication guard was not granted in time"));
      }, timeoutMs);
      state.queue.push(waiter);
    });
  }

  private drain(key: string, state: State) {
    while (state.queue.length > 0) {
      const next = state.queue[0]!;
      if (next.exclusive ? state.writer || state.readers > 0 : state.writer) break;
      state.queue.shift();
      if (next.exclusive) state.writer = true;
      else state.readers += 1;
      next.grant();
      if (next.exclusive) break;
    }
    if (!state.writer && state.readers === 0 && state.queue.length === 0) this.states.delete(key);
  }
}

function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (!done) {
      done = true;
      fn();
    }
  };
}

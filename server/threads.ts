// Entry points that run on threads of their own. `bun build --compile` bundles each as an extra entry point (scripts/build.ts
// lists THREAD_ENTRY_POINTS) under the bundle root, server/. In the executable every bundled module's import.meta.url is the
// executable's own `/$bunfs/root/<name>`, whatever file it came from, so a thread's URL must be resolved from a module that
// sits in server/ itself: this one. Under `bun run` and `bun test` the same expression resolves to the source file.

/** Paths from the repository root, for the build. */
export const THREAD_ENTRY_POINTS = ["server/worker/evaluation-thread.ts"] as const;

/** The evaluation thread (server/worker/evaluation-thread.ts). */
export const EVALUATION_THREAD_URL = new URL("./worker/evaluation-thread.ts", import.meta.url);

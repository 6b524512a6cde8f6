import { readFileSync } from "node:fs";
/** What the benchmarks share: a seeded generator (the same input every run), median timing with warm-up, a process's peak resident set. */

/** mulberry32: a small seeded PRNG, so every run of a benchmark generates the same trees and files. */
export function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function median(samples: readonly number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** Runs `work` `warmup` times untimed, then `runs` times timed; milliseconds rounded to 0.01. */
export function time(work: () => unknown, runs: number, warmup: number): { medianMs: number; minMs: number; maxMs: number } {
  for (let i = 0; i < warmup; i++) work();
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    work();
    samples.push(performance.now() - start);
  }
  const round = (value: number) => Math.round(value * 100) / 100;
  return { medianMs: round(median(samples)), minMs: round(Math.min(...samples)), maxMs: round(Math.max(...samples)) };
}

/** Peak resident set (VmHWM) of a running process, or null once it is gone. */
export function peakRss(pid: number): number | null {
  try {
    const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match === null ? null : Number(match[1]) * 1024;
  } catch {
    return null;
  }
}

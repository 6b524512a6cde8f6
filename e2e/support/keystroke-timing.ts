import type { Page } from "@playwright/test";

/**
 * Types `text` at the end of the playground's CODEOWNERS editor, one key at a time, and times each keystroke in the page:
 * from its keydown to the frame that paints the explanation evaluated for it. Long main-thread tasks are recorded meanwhile.
 * Used by the Playwright test (every keystroke gets its explanation; typing never freezes) and by the typing benchmark
 * (e2e/bench/playground-typing-bench.ts), which holds the time target.
 */
export async function typeAndTime(page: Page, text: string): Promise<{ samples: number[]; longTasks: number[] }> {
  await page.locator("#codeowners").focus();
  await page.keyboard.press("Control+End");
  await page.evaluate(() => {
    const w = window as unknown as { samples: number[]; longTasks: number[] };
    w.samples = [];
    w.longTasks = [];
    new PerformanceObserver((list) => list.getEntries().forEach((entry) => w.longTasks.push(entry.duration))).observe({ type: "longtask" });
    const timing = document.querySelector<HTMLElement>('[data-testid="timing"]')!;
    document.querySelector("#codeowners")!.addEventListener("keydown", () => {
      const before = Number(timing.dataset.revision);
      const started = performance.now();
      const check = () =>
        timing.dataset.busy === "false" && Number(timing.dataset.revision) > before ? requestAnimationFrame(() => w.samples.push(performance.now() - started)) : requestAnimationFrame(check);
      requestAnimationFrame(check);
    });
  });
  for (let i = 0; i < text.length; i++) {
    await page.keyboard.type(text[i]!);
    await page.waitForFunction((n) => (window as unknown as { samples: number[] }).samples.length >= n, i + 1);
    await page.waitForTimeout(100);
  }
  return page.evaluate(() => {
    const w = window as unknown as { samples: number[]; longTasks: number[] };
    return { samples: w.samples, longTasks: w.longTasks };
  });
}

/** Median, largest and every sample (ms, rounded), and the longest main-thread task. */
export function summarize(samples: number[], longTasks: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    keystrokes: samples.length,
    medianMs: Math.round(sorted[Math.floor(sorted.length / 2)] ?? 0),
    maxMs: Math.round(sorted[sorted.length - 1] ?? 0),
    samplesMs: samples.map(Math.round),
    longestMainThreadTaskMs: Math.round(Math.max(0, ...longTasks)),
  };
}

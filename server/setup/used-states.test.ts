import { expect, test } from "bun:test";
import { createUsedStates } from "./used-states.ts";

const NOW = Date.parse("2026-11-22T12:00:00Z");

test("a state is claimed once; a second claim is a replay until it expires", () => {
  const used = createUsedStates();
  expect(used.has("a")).toBe(false);
  expect(used.claim("a", NOW + 600_000, NOW)).toBe("claimed");
  expect(used.has("a")).toBe(true);
  expect(used.claim("a", NOW + 600_000, NOW + 1000)).toBe("replayed");
  expect(used.claim("b", NOW + 600_000, NOW + 1000)).toBe("claimed");
});

test("a released state (the forge did not answer) can be claimed again", () => {
  const used = createUsedStates();
  expect(used.claim("a", NOW + 600_000, NOW)).toBe("claimed");
  used.release("a");
  expect(used.has("a")).toBe(false);
  expect(used.claim("a", NOW + 600_000, NOW)).toBe("claimed");
});

test("at capacity, new states are refused until the oldest expire", () => {
  const used = createUsedStates(3);
  for (const [i, id] of ["a", "b", "c"].entries()) expect(used.claim(id, NOW + 1000 * (i + 1), NOW)).toBe("claimed");
  expect(used.claim("d", NOW + 600_000, NOW)).toBe("full");
  expect(used.claim("a", NOW + 1000, NOW)).toBe("replayed");
  // "a" expired: its place is free, and the others are still remembered.
  expect(used.claim("d", NOW + 600_000, NOW + 1000)).toBe("claimed");
  expect(used.claim("e", NOW + 600_000, NOW + 1000)).toBe("full");
  expect(used.claim("b", NOW + 2000, NOW + 1000)).toBe("replayed");
});

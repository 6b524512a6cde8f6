// Three-valued facts with the gaps that make them unknown. "no" proven by complete evidence dominates "unknown" in a
// conjunction and "yes" dominates in a disjunction, so a gap is reported only when it could change the answer; everything
// else unknown fails closed.
import type { Text } from "./decision.ts";
import type { GapCause, Lookup } from "./evidence.ts";

export interface FactGap {
  readonly cause: GapCause;
  readonly message: Text;
  /** The fact is absent from the evidence: the fetcher did not look it up (planLookups found it unneeded, or a bound stopped it). */
  readonly notLookedUp?: true;
}

export type Fact = { readonly value: "yes" } | { readonly value: "no"; readonly why: Text } | { readonly value: "unknown"; readonly gaps: readonly FactGap[] };

export const YES: Fact = { value: "yes" };
export const no = (why: Text): Fact => ({ value: "no", why });
export const unknown = (...gaps: FactGap[]): Fact => ({ value: "unknown", gaps });

export function all(facts: readonly Fact[]): Fact {
  const gaps: FactGap[] = [];
  for (const fact of facts) {
    if (fact.value === "no") return fact;
    if (fact.value === "unknown") gaps.push(...fact.gaps);
  }
  return gaps.length > 0 ? unknown(...gaps) : YES;
}

export function any(facts: readonly Fact[], whenNone: Text): Fact {
  const gaps: FactGap[] = [];
  let firstNo: Text | null = null;
  for (const fact of facts) {
    if (fact.value === "yes") return fact;
    if (fact.value === "unknown") gaps.push(...fact.gaps);
    else firstNo ??= fact.why;
  }
  if (gaps.length > 0) return unknown(...gaps);
  return no(firstNo ?? whenNone);
}

/** Case-insensitive view of a record keyed by login, team or slug (the forge compares these case-insensitively). */
export class Keyed<T> {
  private readonly map = new Map<string, T>();
  constructor(record: Readonly<Record<string, T>>) {
    for (const [key, value] of Object.entries(record)) this.map.set(key.toLowerCase(), value);
  }
  get(key: string): T | undefined {
    return this.map.get(key.toLowerCase());
  }
}

/** Whether a fact is unknown only because facts it needs are absent from the evidence (not because a lookup failed). */
export const onlyNotLookedUp = (fact: Fact): boolean => fact.value === "unknown" && fact.gaps.length > 0 && fact.gaps.every((gap) => gap.notLookedUp === true);

/**
 * Reads one lookup as a fact. `what` names it for the output. A lookup absent from the evidence is unknown: an inconsistent
 * (permanent) gap, never guessed. The fetcher looks facts up lazily (planLookups), so an absent fact is expected only where
 * an owner set's result cannot depend on it; anywhere else it fails closed.
 */
export function readLookup<T>(lookup: Lookup<T> | undefined, what: Text, test: (value: T) => Fact): Fact {
  if (lookup === undefined) return unknown({ cause: "inconsistent", message: [...what, " was not looked up"], notLookedUp: true });
  if (lookup.kind === "not_found") return no([...what, ": not found"]);
  if (lookup.kind === "incomplete") return unknown({ cause: lookup.cause, message: [...what, `: ${lookup.detail}`] });
  return test(lookup.value);
}

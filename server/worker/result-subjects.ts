import type { Decision, Evidence } from "../evaluation/index.ts";
import { ownerKind } from "../policy/codeowners.ts";
import { encodeSubjects, teamSubject, userSubject } from "../store/index.ts";

/**
 * Whom a decided result depends on beyond the pull request itself (issue 18 item 3), in the stored form
 * (server/store/authority-subjects.ts): every user and team its owner sets name, and every author of its reviews. A
 * membership, collaborator or team change can alter the result only through one of them: eligibility is decided per owner,
 * and only a reviewer's own review can count or block. Email owners are never eligible, so they depend on nobody. Null
 * (unknown, so every authority event re-evaluates it) when the reviews are not all known or the list is over its bound.
 */
export function resultSubjects(decision: Decision, evidence: Evidence): string | null {
  if (!evidence.reviews.complete) return null;
  const subjects: (string | null)[] = [];
  for (const set of decision.ownerSets) {
    for (const owner of set.owners) {
      const kind = ownerKind(owner);
      if (kind === "user") subjects.push(userSubject(owner.slice(1)));
      else if (kind === "team") subjects.push(teamSubject(owner.slice(1, owner.indexOf("/")), owner.slice(owner.indexOf("/") + 1)));
    }
  }
  for (const review of evidence.reviews.items) if (review.user !== null) subjects.push(userSubject(review.user.login));
  return encodeSubjects(subjects);
}

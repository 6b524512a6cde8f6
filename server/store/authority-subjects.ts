/**
 * Authority subjects (issue 18 item 3; migration 0004): whom a pull request's result depends on beyond the pull request
 * itself, and whom an authority event is about. A subject is `user:<login>` or `team:<org>/<slug>`, lower case (the forge
 * matches both case-insensitively). Stored one per line, each line ended by a newline, so that two stored lists concatenate
 * into their union (a fan-out row's merge does that in SQL). A list is bounded: past MAX_AUTHORITY_SUBJECTS subjects (or
 * SUBJECTS_TEXT_LIMIT characters) it is null, which means "unknown": a pull request with unknown subjects is affected by
 * every event, and an event with unknown subjects affects every pull request. Hostile input never widens the bound; it only
 * makes a list unknown.
 */
export const MAX_AUTHORITY_SUBJECTS = 2_000;
/** Characters of one stored list; a merge whose union would be longer becomes unknown (every pull request). */
export const SUBJECTS_TEXT_LIMIT = 64 * 1024;

const LOGIN = /^[a-z0-9](?:[a-z0-9_-]|\[bot\]){0,99}$/;
const SLUG = /^[a-z0-9][a-z0-9_.-]{0,99}$/;

/** `user:<login>`, or null when the login is not one the forge could send. */
export function userSubject(login: unknown): string | null {
  if (typeof login !== "string") return null;
  const key = login.toLowerCase();
  return LOGIN.test(key) ? `user:${key}` : null;
}

/** `team:<org>/<slug>`, or null when either part is not one the forge could send. */
export function teamSubject(org: unknown, slug: unknown): string | null {
  if (typeof org !== "string" || typeof slug !== "string") return null;
  const [o, s] = [org.toLowerCase(), slug.toLowerCase()];
  return LOGIN.test(o) && SLUG.test(s) ? `team:${o}/${s}` : null;
}

/** The stored form: distinct, sorted, newline-ended; null when a subject is null (unknown) or the list is over the bound. */
export function encodeSubjects(subjects: Iterable<string | null>): string | null {
  const distinct = new Set<string>();
  for (const subject of subjects) {
    if (subject === null) return null;
    distinct.add(subject);
    if (distinct.size > MAX_AUTHORITY_SUBJECTS) return null;
  }
  const text = [...distinct].sort().map((subject) => `${subject}\n`).join("");
  return text.length > SUBJECTS_TEXT_LIMIT ? null : text;
}

export function decodeSubjects(text: string | null): Set<string> | null {
  return text === null ? null : new Set(text.split("\n").filter((line) => line !== ""));
}

/** Whether an event about `event` subjects can change a result that depends on `result` subjects (unknown: yes). */
export function subjectsMeet(event: Set<string> | null, result: Set<string> | null): boolean {
  if (event === null || result === null) return true;
  for (const subject of event) if (result.has(subject)) return true;
  return false;
}

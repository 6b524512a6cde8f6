// Links to the forge's web pages for what a record names, built from the configured forge web origin
// (SERVICE_FORGE_WEB_URL, written into the page by the service). Every part comes from a record, so each is checked for the
// shape the forge gives it before it becomes part of a URL; anything else gets no link (the page shows the SHA instead).

const FULL_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})\/[A-Za-z0-9._-]{1,100}$/;
const SHA = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;

/** The forge web origin from the page's settings, or null when there is none or it is not an http(s) origin. */
export function forgeOrigin(value: string | null | undefined): string | null {
  if (!value) return null;
  try {
    const url = new URL(value);
    if (url.protocol !== "https:" && url.protocol !== "http:") return null;
    return url.origin + url.pathname.replace(/\/+$/, "");
  } catch {
    return null;
  }
}

function repositoryPath(web: string | null, fullName: string): string | null {
  if (web === null || !FULL_NAME.test(fullName)) return null;
  return `${web}/${fullName}`;
}

/** A file at a commit: `{web}/{owner}/{name}/blob/{commit}/{path}` (each path segment encoded). */
export function blobUrl(web: string | null, fullName: string, commit: string | null, path: string): string | null {
  const repository = repositoryPath(web, fullName);
  if (repository === null || commit === null || !SHA.test(commit) || path.length === 0 || path.length > 4096) return null;
  const segments = path.split("/");
  if (segments.some((segment) => segment === "" || segment === "." || segment === "..")) return null;
  return `${repository}/blob/${commit}/${segments.map(encodeURIComponent).join("/")}`;
}

export function pullUrl(web: string | null, fullName: string, pull: number): string | null {
  const repository = repositoryPath(web, fullName);
  return repository === null || !Number.isSafeInteger(pull) || pull < 1 ? null : `${repository}/pull/${pull}`;
}

export function commitUrl(web: string | null, fullName: string, commit: string | null): string | null {
  const repository = repositoryPath(web, fullName);
  return repository === null || commit === null || !SHA.test(commit) ? null : `${repository}/commit/${commit}`;
}

// Repository routes (installation token): repository, pull requests with files and reviews, contents and blobs.
import { diffCommits } from "./git.ts";
import { BLOB_CONTENT_LIMIT, MAX_LISTED_PULL_FILES, ok, paginate, repoFor, resolveRef, pullCounts, mustPull, s, HttpFail, type Route } from "./route-kit.ts";
import { pullJson, repositoryJson, reviewJson } from "./shapes.ts";

const SHA_MEDIA_TYPE = "application/vnd.github.sha";

export const REPOSITORY_ROUTES: Route[] = [
  { method: "GET", path: "/repos/{owner}/{repo}", auth: "token", permission: ["metadata", "read"], handle: (ctx) => ok(repositoryJson(ctx.base, s(ctx), repoFor(ctx))) },
  {
    method: "GET", path: "/repos/{owner}/{repo}/pulls/{pull_number}", auth: "token", permission: ["pull_requests", "read"], handle: (ctx) => {
      const repo = repoFor(ctx);
      const pr = mustPull(ctx, repo);
      return ok(pullJson(ctx.base, s(ctx), repo, pr, pullCounts(ctx, repo, pr.headSha, pr.baseSha)));
    },
  },
  {
    method: "GET", path: "/repos/{owner}/{repo}/pulls", auth: "token", permission: ["pull_requests", "read"], handle: (ctx) => {
      const repo = repoFor(ctx);
      const q = ctx.url.searchParams;
      const state = q.get("state") ?? "open";
      const head = q.get("head");
      const all = [...repo.pulls.values()]
        .filter((p) => (state === "all" || p.state === state) && (!q.get("base") || p.baseRef === q.get("base")) && (!head || `${repo.ownerLogin}:${p.headRef}` === head))
        // sort=updated (the reconciler's recently closed pull requests, DESIGN 3.10): by updated_at, newest first unless
        // direction=asc; otherwise by number, as before.
        .sort(q.get("sort") === "updated"
          ? (a, b) => (q.get("direction") === "asc" ? 1 : -1) * (a.updatedAt < b.updatedAt ? -1 : a.updatedAt > b.updatedAt ? 1 : a.number - b.number)
          : (a, b) => (q.get("direction") === "asc" ? a.number - b.number : b.number - a.number));
      const page = paginate(ctx, all);
      return ok(page.items.map((p) => pullJson(ctx.base, s(ctx), repo, p)), page.headers);
    },
  },
  {
    // The pull requests associated with a commit: here those whose head it is, open or closed (the forge also names merged
    // ones whose history holds it), by number; one opened or moved onto it within the lag fault is missing (control.ts).
    method: "GET", path: "/repos/{owner}/{repo}/commits/{commit_sha}/pulls", auth: "token", permission: ["pull_requests", "read"], handle: (ctx) => {
      const repo = repoFor(ctx);
      const sha = ctx.params.commit_sha!;
      const now = Date.now();
      const all = [...repo.pulls.values()]
        .filter((p) => p.headSha === sha && (ctx.control.commitPullsVisibleAt.get(p.id) ?? 0) <= now)
        .sort((a, b) => a.number - b.number);
      const page = paginate(ctx, all);
      return ok(page.items.map((p) => pullJson(ctx.base, s(ctx), repo, p)), page.headers);
    },
  },
  {
    method: "GET", path: "/repos/{owner}/{repo}/pulls/{pull_number}/files", auth: "token", permission: ["pull_requests", "read"], handle: (ctx) => {
      const repo = repoFor(ctx);
      const pr = mustPull(ctx, repo);
      const full = `${repo.ownerLogin}/${repo.name}`;
      const files = diffCommits(s(ctx), pr.baseSha, pr.headSha).slice(0, MAX_LISTED_PULL_FILES);
      const page = paginate(ctx, files);
      return ok(page.items.map((f) => ({
        sha: f.sha, filename: f.filename, status: f.status, additions: f.additions, deletions: f.deletions, changes: f.additions + f.deletions,
        blob_url: `${ctx.base}/html/${full}/blob/${pr.headSha}/${f.filename}`, raw_url: `${ctx.base}/html/${full}/raw/${pr.headSha}/${f.filename}`,
        contents_url: `${ctx.base}/repos/${full}/contents/${f.filename}?ref=${pr.headSha}`, patch: "",
        ...(f.previous_filename ? { previous_filename: f.previous_filename } : {}),
      })), page.headers);
    },
  },
  {
    method: "GET", path: "/repos/{owner}/{repo}/pulls/{pull_number}/reviews", auth: "token", permission: ["pull_requests", "read"], handle: (ctx) => {
      const repo = repoFor(ctx);
      const pr = mustPull(ctx, repo);
      const page = paginate(ctx, pr.reviews);
      return ok(page.items.map((r) => reviewJson(ctx.base, s(ctx), repo, pr, r)), page.headers);
    },
  },
  {
    method: "GET", path: "/repos/{owner}/{repo}/contents/{path}", auth: "token", permission: ["contents", "read"], handle: (ctx) => {
      const repo = repoFor(ctx);
      const sha = resolveRef(repo, ctx.url.searchParams.get("ref"));
      const commit = sha ? s(ctx).commits.get(sha) : undefined;
      const path = ctx.params.path!;
      const blobSha = commit?.tree.get(path);
      if (!commit || !blobSha) throw new HttpFail(404, "Not Found");
      const bytes = s(ctx).blobs.get(blobSha)!;
      const full = `${repo.ownerLogin}/${repo.name}`;
      const self = `${ctx.base}/repos/${full}/contents/${path}?ref=${sha}`;
      const big = bytes.length > BLOB_CONTENT_LIMIT;
      return ok({
        type: "file", encoding: big ? "none" : "base64", size: bytes.length, name: path.split("/").pop(), path, sha: blobSha,
        content: big ? "" : wrap64(Buffer.from(bytes).toString("base64")), url: self, git_url: `${ctx.base}/repos/${full}/git/blobs/${blobSha}`,
        html_url: `${ctx.base}/html/${full}/blob/${sha}/${path}`, download_url: `${ctx.base}/html/${full}/raw/${sha}/${path}`,
        _links: { self, git: `${ctx.base}/repos/${full}/git/blobs/${blobSha}`, html: `${ctx.base}/html/${full}/blob/${sha}/${path}` },
      });
    },
  },
  {
    // A commit by SHA, branch or HEAD (the default branch). With the SHA media type the body is the bare SHA and the ETag is
    // that SHA quoted, so `If-None-Match: "<sha>"` answers 304 while the ref still points there (as the forge documents).
    method: "GET", path: "/repos/{owner}/{repo}/commits/{ref}", auth: "token", permission: ["contents", "read"], handle: (ctx) => {
      const repo = repoFor(ctx);
      const ref = ctx.params.ref!;
      const sha = resolveRef(repo, ref === "HEAD" ? null : ref);
      const commit = sha ? s(ctx).commits.get(sha) : undefined;
      if (!sha || !commit) throw new HttpFail(404, "Not Found");
      if ((ctx.req.headers.get("accept") ?? "").includes(SHA_MEDIA_TYPE)) {
        return { status: 200, text: sha, headers: { "content-type": `${SHA_MEDIA_TYPE}; charset=utf-8`, etag: `"${sha}"` } };
      }
      const full = `${repo.ownerLogin}/${repo.name}`;
      const person = { name: repo.ownerLogin, email: `${repo.ownerLogin}@users.noreply.example`, date: commit.date };
      return ok({
        sha, node_id: Buffer.from(`Commit:${sha}`).toString("base64"), url: `${ctx.base}/repos/${full}/commits/${sha}`,
        html_url: `${ctx.base}/html/${full}/commit/${sha}`, comments_url: `${ctx.base}/repos/${full}/commits/${sha}/comments`,
        commit: { url: `${ctx.base}/repos/${full}/git/commits/${sha}`, author: person, committer: person, message: commit.message, comment_count: 0, tree: { sha, url: `${ctx.base}/repos/${full}/git/trees/${sha}` } },
        author: null, committer: null, parents: commit.parent ? [{ sha: commit.parent, url: `${ctx.base}/repos/${full}/commits/${commit.parent}` }] : [],
      });
    },
  },
  {
    method: "GET", path: "/repos/{owner}/{repo}/git/blobs/{file_sha}", auth: "token", permission: ["contents", "read"], handle: (ctx) => {
      const repo = repoFor(ctx);
      const bytes = s(ctx).blobs.get(ctx.params.file_sha!);
      if (!bytes) throw new HttpFail(404, "Not Found");
      return ok({
        sha: ctx.params.file_sha, node_id: Buffer.from(`Blob:${ctx.params.file_sha}`).toString("base64"), size: bytes.length,
        url: `${ctx.base}/repos/${repo.ownerLogin}/${repo.name}/git/blobs/${ctx.params.file_sha}`, content: wrap64(Buffer.from(bytes).toString("base64")), encoding: "base64",
      });
    },
  },
];

function wrap64(b64: string): string { return (b64.match(/.{1,60}/g) ?? [""]).join("\n") + (b64 ? "\n" : ""); }

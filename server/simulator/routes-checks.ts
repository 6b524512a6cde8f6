// Check-run routes (installation token, checks permission): list on a commit, create, update (only by the creating App).
import type { CheckRun, Installation } from "./model.ts";
import { ok, paginate, repoFor, resolveRef, s, HttpFail, type Route } from "./route-kit.ts";
import { checkRunJson } from "./shapes.ts";

export const CHECK_ROUTES: Route[] = [
  {
    method: "GET", path: "/repos/{owner}/{repo}/commits/{ref}/check-runs", auth: "token", permission: ["checks", "read"], handle: (ctx) => {
      const repo = repoFor(ctx);
      const sha = resolveRef(repo, ctx.params.ref!);
      const q = ctx.url.searchParams;
      let runs = [...s(ctx).checkRuns.values()].filter((r) => r.repoId === repo.id && r.headSha === sha
        && (!q.get("check_name") || r.name === q.get("check_name")) && (!q.get("app_id") || r.appId === Number(q.get("app_id"))));
      if ((q.get("filter") ?? "latest") === "latest") {
        const latest = new Map<string, (typeof runs)[number]>();
        for (const r of runs) { const k = `${r.appId}/${r.name}`; if ((latest.get(k)?.id ?? 0) < r.id) latest.set(k, r); }
        runs = [...latest.values()];
      }
      runs.sort((a, b) => b.id - a.id);
      const page = paginate(ctx, runs);
      return ok({ total_count: runs.length, check_runs: page.items.map((r) => checkRunJson(ctx.base, s(ctx), repo, r)) }, page.headers);
    },
  },
  {
    method: "POST", path: "/repos/{owner}/{repo}/check-runs", auth: "token", permission: ["checks", "write"], handle: (ctx) => {
      const repo = repoFor(ctx);
      const body = (ctx.body ?? {}) as Record<string, unknown>;
      if (typeof body.name !== "string" || typeof body.head_sha !== "string" || !s(ctx).commits.has(body.head_sha)) throw new HttpFail(422, "Validation Failed");
      const id = s(ctx).nextId("check");
      const run = {
        id, appId: (ctx.auth as { installation: Installation }).installation.appId, repoId: repo.id, name: body.name, headSha: body.head_sha,
        status: "queued" as const, conclusion: null, output: { title: null, summary: null, text: null }, startedAt: new Date().toISOString(),
        completedAt: null, externalId: null, detailsUrl: null, suiteId: s(ctx).nextId("suite"),
      };
      applyCheckUpdate(run, body);
      s(ctx).checkRuns.set(id, run);
      ctx.control.mergeQueues.checkRunChanged(run);
      return { status: 201, body: checkRunJson(ctx.base, s(ctx), repo, run) };
    },
  },
  {
    method: "PATCH", path: "/repos/{owner}/{repo}/check-runs/{check_run_id}", auth: "token", permission: ["checks", "write"], handle: (ctx) => {
      const repo = repoFor(ctx);
      const run = s(ctx).checkRuns.get(Number(ctx.params.check_run_id));
      if (!run || run.repoId !== repo.id) throw new HttpFail(404, "Not Found");
      if (run.appId !== (ctx.auth as { installation: Installation }).installation.appId) throw new HttpFail(403, "Invalid app_id `" + run.appId + "` - check run can only be modified by the GitHub App that created it.");
      applyCheckUpdate(run, (ctx.body ?? {}) as Record<string, unknown>);
      ctx.control.mergeQueues.checkRunChanged(run);
      return ok(checkRunJson(ctx.base, s(ctx), repo, run));
    },
  },
];

function applyCheckUpdate(run: CheckRun, body: Record<string, unknown>): void {
  const now = new Date().toISOString();
  if (typeof body.name === "string") run.name = body.name;
  if (typeof body.external_id === "string") run.externalId = body.external_id;
  if (typeof body.details_url === "string") run.detailsUrl = body.details_url;
  if (typeof body.started_at === "string") run.startedAt = body.started_at;
  const output = body.output as { title?: string; summary?: string; text?: string } | undefined;
  if (output) run.output = { title: output.title ?? null, summary: output.summary ?? null, text: output.text ?? null };
  if (typeof body.conclusion === "string") {
    run.status = "completed"; run.conclusion = body.conclusion; run.completedAt = typeof body.completed_at === "string" ? body.completed_at : now;
  } else if (body.status === "in_progress" || body.status === "queued") {
    run.status = body.status; run.conclusion = null; run.completedAt = null;
  } else if (body.status === "completed") {
    throw new HttpFail(422, "conclusion is required when status is completed");
  }
}


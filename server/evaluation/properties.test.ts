// Property-based tests (issue 3 item 5): statements that hold for every generated input.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { parseCodeowners } from "../policy/codeowners.ts";
import { compilePattern, patternRegExp } from "../policy/pattern.ts";
import { evaluate } from "./evaluate.ts";
import { DEFAULT_EVALUATION_SETTINGS, type Evidence, type Review } from "./evidence.ts";
import { BOT, HEAD, OLD_HEAD, USERS, baseEvidence, delegationPolicy, directoryFromPlan, review, withCodeowners, withFiles, withRepositoryPolicy, withReviews } from "./evidence-fixture.ts";

const RUNS = { numRuns: 300 };

// ---- patterns -------------------------------------------------------------------------------------------------------

const segmentText = fc.constantFrom("a", "b", "ab", "a.md", "b.ts", "x.y.md", ".hidden", "ü", "日本");
const patternSegment = fc.constantFrom("a", "b", "ab", "*", "**", "a*", "*.md", "?", "a?", "*b", ".hidden", "\\*", "x.*", "ü");
const patternSource = fc
  .tuple(fc.boolean(), fc.array(patternSegment, { minLength: 1, maxLength: 4 }), fc.boolean())
  .map(([lead, segments, trail]) => `${lead ? "/" : ""}${segments.join("/")}${trail ? "/" : ""}`);
const path = fc.array(segmentText, { minLength: 1, maxLength: 5 }).map((segments) => segments.join("/"));

describe("pattern properties", () => {
  test("the segment matcher agrees with the RegExp reference on every pattern and path", () => {
    fc.assert(
      fc.property(patternSource, path, (source, candidate) => {
        const compiled = compilePattern(source);
        const regex = patternRegExp(source);
        if (!compiled.ok) return regex === null;
        return compiled.pattern.test(candidate) === regex!.test(candidate);
      }),
      { numRuns: 2000 },
    );
  });

  test("patterns with several ** agree with the RegExp reference on deep paths", () => {
    // Two to five `**` between literal and wildcard segments, against paths built from the same words so `**` has many
    // places to resume: where a backtracking matcher would explore every split, the answer must still be the reference's.
    const word = fc.constantFrom("a", "b", "ab", "a.md", "x.y.md");
    const between = fc.array(fc.constantFrom("a", "b", "*", "a*", "*.md", "?", "*b*", "a?*"), { minLength: 1, maxLength: 2 });
    const multiStar = fc
      .tuple(fc.boolean(), fc.array(between, { minLength: 2, maxLength: 5 }), fc.boolean(), fc.boolean())
      .map(([lead, groups, leadingStar, trail]) => {
        const body = groups.map((group) => group.join("/")).join("/**/");
        return `${lead ? "/" : ""}${leadingStar ? "**/" : ""}${body}${trail ? "/**" : ""}`;
      });
    const deep = fc.array(word, { minLength: 1, maxLength: 12 }).map((segments) => segments.join("/"));
    fc.assert(
      fc.property(multiStar, deep, (source, candidate) => {
        const compiled = compilePattern(source);
        const regex = patternRegExp(source);
        if (!compiled.ok) return regex === null;
        return compiled.pattern.test(candidate) === regex!.test(candidate);
      }),
      { numRuns: 3000 },
    );
  });

  test("the indexed match answers exactly what the reverse scan answers", () => {
    const line = fc.tuple(patternSource, fc.constantFrom("@a", "@b", "@org/t", "")).map(([source, owner]) => `${source} ${owner}`.trim());
    fc.assert(
      fc.property(fc.array(line, { maxLength: 25 }), fc.array(path, { minLength: 1, maxLength: 10 }), (lines, paths) => {
        const parsed = parseCodeowners(lines.join("\n"));
        return paths.every((candidate) => JSON.stringify(parsed.match(candidate)) === JSON.stringify(parsed.matchNaive(candidate)));
      }),
      { numRuns: 500 },
    );
  });

  test("rules repeating a pattern, or spelling it with escapes, leave the indexed match equal to the reverse scan", () => {
    // A small pool, so most files repeat some pattern: the index files only the last of equal patterns.
    const pooled = fc.constantFrom("a", "\\a", "a/", "\\a/", "/a", "/\\a", "/a/", "a/b", "a/\\b", "/a/b/", "*.md", "\\*.md", "*", "**/a", "a/*", "a\\*");
    const line = fc.tuple(pooled, fc.constantFrom("@a", "@b", "")).map(([source, owner]) => `${source} ${owner}`.trim());
    const candidate = fc.array(fc.constantFrom("a", "b", "a.md", "*.md", "a*", "c"), { minLength: 1, maxLength: 4 }).map((segments) => segments.join("/"));
    fc.assert(
      fc.property(fc.array(line, { maxLength: 30 }), fc.array(candidate, { minLength: 1, maxLength: 10 }), (lines, paths) => {
        const parsed = parseCodeowners(lines.join("\n"));
        return paths.every((path) => JSON.stringify(parsed.match(path)) === JSON.stringify(parsed.matchNaive(path)));
      }),
      { numRuns: 1000 },
    );
  });

  test("* and ? never match across a slash", () => {
    fc.assert(
      fc.property(fc.array(segmentText, { minLength: 2, maxLength: 4 }), (segments) => {
        const candidate = segments.join("/");
        const single = compilePattern(`/${"?".repeat(candidate.length)}`);
        const star = compilePattern("/*");
        return (!single.ok || !single.pattern.test(candidate)) && star.ok && !star.pattern.test(candidate);
      }),
    );
  });
});

// ---- evaluation -----------------------------------------------------------------------------------------------------

const RULES = ["* @acme/core", "/src/ @alice", "/docs/ @acme/docs", "*.md @erin", "/src/lib/ @bob @alice", "/vendor/", "/deploy/ @acme/docs", "/.forge/ @acme/docs @bob"];
const PATHS = ["src/a.ts", "src/lib/b.ts", "docs/c.md", "README.md", "vendor/x.js", "deploy/prod.yml", ".forge/workflows/ci.yml", "CODEOWNERS", "docs-review-bot.toml", "docs/guide/intro.md"];
const REVIEWERS = [USERS.alice, USERS.bob, USERS.carol, USERS.dave, USERS.erin, USERS.mallory, USERS.author, BOT, { ...BOT, id: 777 }];
const STATES = ["APPROVED", "CHANGES_REQUESTED", "COMMENTED", "DISMISSED"];

const reviewArb = fc.tuple(fc.constantFrom(...REVIEWERS), fc.constantFrom(...STATES), fc.constantFrom(HEAD, OLD_HEAD)).map(([user, state, commit]) => review(user, state, commit));

const scenario = fc
  .record({
    rules: fc.subarray(RULES, { minLength: 1 }),
    paths: fc.subarray(PATHS, { minLength: 1 }),
    reviews: fc.array(reviewArb, { maxLength: 8 }),
    required: fc.integer({ min: 1, max: 2 }),
    delegation: fc.constantFrom(null, ["docs/**"], ["**"], ["docs/**", "*.md"]),
    label: fc.boolean(),
    labelled: fc.boolean(),
  })
  .map(({ rules, paths, reviews, required, delegation, label, labelled }) => {
    const policy = delegation === null ? `schema_version = 1\nenabled = true\nrequired_approvals = ${required}\n` : delegationPolicy(delegation, label ? 'required_label = "bot-review"' : "", required);
    const evidence = withReviews(withFiles(withRepositoryPolicy(withCodeowners(baseEvidence(), rules.join("\n")), policy), paths), ...reviews);
    return { ...evidence, pullRequest: { ...evidence.pullRequest, labels: labelled ? ["bot-review"] : [] } } satisfies Evidence;
  });

const verdict = (evidence: Evidence, allowInsecureChanges = false) => {
  const decision = evaluate(evidence, { ...DEFAULT_EVALUATION_SETTINGS, allowInsecureChanges });
  return `${decision.kind}:${decision.conclusion}`;
};
const reviewsOf = (evidence: Evidence): Review[] => (evidence.reviews.complete ? [...evidence.reviews.items] : []);

describe("evaluation properties", () => {
  test("an approval on any other commit never changes the outcome", () => {
    fc.assert(
      fc.property(scenario, fc.array(fc.constantFrom(...REVIEWERS), { minLength: 1, maxLength: 4 }), (evidence, extra) => {
        // Approvals of an older commit, placed before the existing reviews (a reviewer without a decisive review gets one
        // as their latest; it must still not count).
        const older = extra.map((user) => review(user, "APPROVED", OLD_HEAD));
        expect(verdict(withReviews(evidence, ...older, ...reviewsOf(evidence)))).toBe(verdict(evidence));
      }),
      RUNS,
    );
  });

  test("review order never matters beyond each reviewer's own sequence", () => {
    fc.assert(
      fc.property(scenario, fc.array(fc.nat(), { minLength: 8, maxLength: 8 }), (evidence, keys) => {
        const reviews = reviewsOf(evidence);
        // Interleave reviewers differently while keeping each reviewer's own reviews in order.
        const byUser = new Map<number, Review[]>();
        for (const r of reviews) byUser.set(r.user!.id, [...(byUser.get(r.user!.id) ?? []), r]);
        const queues = [...byUser.values()];
        const shuffled: Review[] = [];
        let k = 0;
        while (queues.some((queue) => queue.length > 0)) {
          const open = queues.filter((queue) => queue.length > 0);
          shuffled.push(open[(keys[k++ % keys.length] ?? 0) % open.length]!.shift()!);
        }
        return verdict(withReviews(evidence, ...shuffled)) === verdict(evidence);
      }),
      RUNS,
    );
  });

  test("an approval by a non-owner or an untrusted App never turns failure into success", () => {
    const outsider = fc.constantFrom(USERS.mallory, USERS.carol, { id: 4242, login: "untrusted-app[bot]", type: "Bot" }, { ...BOT, id: 777 }, { ...BOT, login: "Docs-Review-Bot[bot]" });
    fc.assert(
      fc.property(scenario, outsider, (evidence, user) => {
        const before = verdict(evidence);
        const after = verdict(withReviews(evidence, ...reviewsOf(evidence), review(user, "APPROVED", HEAD)));
        return before === after || !(before.endsWith("failure") && after.endsWith("success"));
      }),
      RUNS,
    );
  });

  test("adding a non-delegable path never lets an App approval count for it", () => {
    const guarded = fc.constantFrom("CODEOWNERS", ".forge/CODEOWNERS", "docs/CODEOWNERS", ".forge/service-policy.toml", ".forge/workflows/deploy.yml", ".forge/actions/a/action.yml", "docs-review-bot.toml", "deploy/prod.yml", "Makefile");
    fc.assert(
      fc.property(scenario, guarded, fc.boolean(), (evidence, extra, insecure) => {
        const files = evidence.files.complete ? evidence.files.items.map((file) => file.filename) : [];
        const widened = withFiles(evidence, [...new Set([...files, extra])]);
        const decision = evaluate(widened, { ...DEFAULT_EVALUATION_SETTINGS, allowInsecureChanges: insecure });
        const organizationGuardrail = extra === "Makefile" || extra.startsWith("deploy/");
        if (insecure && !organizationGuardrail) return true;
        return decision.ownerSets.filter((set) => set.paths.includes(extra)).every((set) => set.counted.every((approval) => approval.via.kind !== "app"));
      }),
      RUNS,
    );
  });

  test("the insecure switch never removes an organization guardrail", () => {
    const guardrailPath = fc.constantFrom("deploy/prod.yml", "deploy/a/b.sh", "Makefile");
    fc.assert(
      fc.property(scenario, guardrailPath, (evidence, extra) => {
        const appApproved = withReviews(withFiles(withCodeowners(withRepositoryPolicy(evidence, delegationPolicy(["**"])), "* @acme/docs"), [extra]), review(BOT, "APPROVED", HEAD));
        const decision = evaluate(appApproved, { ...DEFAULT_EVALUATION_SETTINGS, allowInsecureChanges: true });
        return decision.conclusion !== "success" && decision.ownerSets.every((set) => set.counted.length === 0);
      }),
      { numRuns: 100 },
    );
  });

  test("evidence holding only the planned directory facts is complete for the evaluation", () => {
    const odd = fc.constantFrom({ id: 77, login: "acme", type: "Organization" }, { id: 78, login: "ghost", type: "Mannequin" });
    fc.assert(
      fc.property(scenario, fc.option(odd), (evidence, extra) => {
        const reviewed = extra === null ? evidence : withReviews(evidence, ...reviewsOf(evidence), review(extra, "APPROVED", HEAD));
        const decision = evaluate(directoryFromPlan(reviewed), DEFAULT_EVALUATION_SETTINGS);
        const complete = evaluate(reviewed, DEFAULT_EVALUATION_SETTINGS);
        return decision.reasons.every((reason) => reason.code !== "directory_incomplete") && decision.conclusion === complete.conclusion && decision.kind === complete.kind;
      }),
      RUNS,
    );
  });

  test("incomplete evidence never yields success", () => {
    const gap = fc.constantFrom("files", "reviews", "sameHead", "organizationPolicy", "codeowners") ;
    fc.assert(
      fc.property(scenario, gap, fc.constantFrom("transient" as const, "over_bound" as const, "inconsistent" as const), (evidence, where, cause) => {
        const missing = { complete: false as const, cause, detail: "cut" };
        const broken: Evidence =
          where === "files" ? { ...evidence, files: missing }
          : where === "reviews" ? { ...evidence, reviews: missing }
          : where === "sameHead" ? { ...evidence, sameHeadPullRequests: missing }
          : where === "organizationPolicy" ? { ...evidence, organizationPolicy: { kind: "incomplete", cause, detail: "cut" } }
          : { ...evidence, codeowners: { ".forge/CODEOWNERS": { kind: "incomplete", cause, detail: "cut" } } };
        return evaluate(broken, DEFAULT_EVALUATION_SETTINGS).conclusion !== "success";
      }),
      RUNS,
    );
  });
});

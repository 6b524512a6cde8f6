import { describe, expect, test } from "bun:test";
import { parseCodeowners } from "./codeowners.ts";
import { MatchBudget, MatchBudgetExceeded } from "./match-budget.ts";

// Cases from GitHub's "About code owners" page (example file, its explanations, and "Syntax exceptions"), from gitignore's
// pattern format, and facts observed in other implementations (hmarr/codeowners pattern table). Each row: pattern, path,
// whether the pattern owns the path.
type Row = readonly [pattern: string, path: string, owned: boolean];

const table: Record<string, readonly Row[]> = {
  "a lone * owns every path at every depth": [
    ["*", "README.md", true],
    ["*", "src/a.js", true],
    ["*", "a/b/c/d.txt", true],
    ["*", ".hidden", true],
  ],
  "an extension pattern owns files with that extension at any depth": [
    ["*.js", "a.js", true],
    ["*.js", "src/app/a.js", true],
    ["*.js", "a.jsx", false],
    ["*.js", "a.js.map", false],
    ["*.go", "cmd/main.go", true],
    ["*.txt", "notes/a.txt", true],
    ["*.min.js", "dist/app.min.js", true],
    ["*.min.js", "dist/app.js", false],
  ],
  "a single name without slash matches a file or directory of that name at any depth": [
    ["foo", "foo", true],
    ["foo", "foo.txt", false],
    ["foo", "foo/bar", true],
    ["foo", "bar/foo", true],
    ["foo", "bar/foo.txt", false],
    ["foo", "bar/baz", false],
    ["foo", "bar/foo/baz", true],
    ["README.md", "README.md", true],
    ["README.md", "docs/README.md", true],
    ["README.md", "README.md.bak", false],
  ],
  "a leading slash anchors to the repository root": [
    ["/foo", "foo", true],
    ["/foo", "fool.txt", false],
    ["/foo", "foo/bar", true],
    ["/foo", "bar/foo", false],
    ["/foo", "foo/bar/baz", true],
    ["/foo", "bar/foo/baz", false],
    ["/Makefile", "Makefile", true],
    ["/Makefile", "src/Makefile", false],
  ],
  "a trailing slash matches directories only, at any depth": [
    ["foo/", "foo", false],
    ["foo/", "foo/bar", true],
    ["foo/", "foo/bar/baz", true],
    ["foo/", "bar/foo", false],
    ["foo/", "bar/foo/baz", true],
    ["foo/", "bar/foo/baz/qux", true],
    ["apps/", "apps/web/index.ts", true],
    ["apps/", "src/apps/web/index.ts", true],
    ["apps/", "apps", false],
  ],
  "leading and trailing slashes: a root directory and everything below": [
    ["/foo/", "foo", false],
    ["/foo/", "foo/bar", true],
    ["/foo/", "foo/bar/baz", true],
    ["/foo/", "bar/foo/baz", false],
    ["/build/logs/", "build/logs/a.log", true],
    ["/build/logs/", "build/logs/deep/a.log", true],
    ["/build/logs/", "x/build/logs/a.log", false],
    ["/docs/", "docs/getting-started.md", true],
    ["/docs/", "docs/build-app/troubleshooting.md", true],
    ["/docs/", "src/docs/a.md", false],
    ["/scripts/", "scripts/deploy.sh", true],
  ],
  "a slash in the middle anchors to the root": [
    ["foo/bar", "foo/bar", true],
    ["foo/bar", "foo/bart", false],
    ["foo/bar", "foo/bar/baz", true],
    ["foo/bar", "baz/foo/bar", false],
    ["foo/bar", "baz/foo/bar/qux", false],
    ["/foo/bar", "foo/bar", true],
    ["/foo/bar", "baz/foo/bar", false],
    ["foo/bar/", "foo/bar", false],
    ["foo/bar/", "foo/bar/baz", true],
    ["foo/bar/", "baz/foo/bar/qux", false],
    ["/foo/bar/", "foo/bar/baz/qux", true],
  ],
  "a trailing /* owns direct children only": [
    ["docs/*", "docs/getting-started.md", true],
    ["docs/*", "docs/build-app/troubleshooting.md", false],
    ["docs/*", "docs", false],
    ["docs/*", "build/docs/a.md", false],
    ["foo/*", "foo/bar", true],
    ["foo/*", "foo/bar/baz", false],
    ["/*", "foo", true],
    ["/*", "bar", true],
    ["/*", "foo/bar", false],
    ["/*", "foo/bar/baz", false],
  ],
  "* and ? never cross a slash": [
    ["f*", "foo", true],
    ["f*", "foo/bar", true],
    ["f*", "bar/foo/baz", true],
    ["f*", "bar/baz", false],
    ["f*", "xfoo", false],
    ["/f*", "foo/bar/baz", true],
    ["/f*", "bar/foo", false],
    ["foo/*.txt", "foo/bar.txt", true],
    ["foo/*.txt", "foo/bar/baz.txt", false],
    ["foo/*.txt", "qux/foo/bar.txt", false],
    ["foo/*/baz", "foo/bar/baz", true],
    ["foo/*/baz", "foo/bar/baz/qux", true],
    ["foo/*/baz", "foo/baz", false],
    ["foo/*/baz", "foo/a/b/baz", false],
    ["f?o", "foo", true],
    ["f?o", "fo", false],
    ["f?o", "fooo", false],
    ["f?o", "f/o", false],
    ["a?c/x", "abc/x", true],
    ["a?c/x", "a/c/x", false],
  ],
  "a wildcard with a trailing slash matches directories only": [
    ["f*/", "foo", false],
    ["f*/", "foo/bar", true],
    ["f*/", "bar/foo/baz", true],
    ["/*/", "foo", false],
    ["/*/", "foo/bar", true],
    ["/*/", "bar/foo/baz", true],
    ["/f*/", "foo/bar", true],
    ["/f*/", "bar/foo/baz", false],
  ],
  "a leading **/ matches in every directory": [
    ["**/logs", "logs", true],
    ["**/logs", "build/logs", true],
    ["**/logs", "scripts/logs/a.txt", true],
    ["**/logs", "deeply/nested/logs/x.log", true],
    ["**/logs", "logsx", false],
    ["**/foo/bar", "foo/bar", true],
    ["**/foo/bar", "qux/foo/bar", true],
    ["**/foo/bar", "qux/foo/bar/baz", true],
    ["**/foo/bar", "foo/baz/bar", false],
    ["**/*bar*", "bar", true],
    ["**/*bar*", "foo/rebar", true],
    ["**/*bar*", "foo/qux/bar", true],
  ],
  "a trailing /** matches everything inside, not the directory itself": [
    ["foo/bar/**", "foo/bar", false],
    ["foo/bar/**", "foo/bar/baz", true],
    ["foo/bar/**", "foo/bar/baz/qux", true],
    ["foo/bar/**", "qux/foo/bar/baz", false],
    ["docs/**", "docs/a/b/c.md", true],
  ],
  "a middle /**/ matches zero or more directories": [
    ["foo/**/bar", "foo/bar", true],
    ["foo/**/bar", "foo/bar/baz", true],
    ["foo/**/bar", "foo/qux/bar/baz", true],
    ["foo/**/bar", "foo/qux/quux/bar/baz", true],
    ["foo/**/bar", "qux/foo/bar", false],
    ["foo/**/", "foo", false],
    ["foo/**/", "foo/bar", true],
    ["foo/**/", "foo/bar/baz", true],
    ["foo/**/bar/b*", "foo/bar/baz", true],
    ["foo/**/bar/b*", "foo/bar/qux", false],
    ["foo/**/bar/b*", "foo/qux/bar/baz", true],
    ["docs/**/*.md", "docs/a.md", true],
    ["docs/**/*.md", "docs/x/y/a.md", true],
    ["docs/**/*.md", "docs/x/y/a.txt", false],
  ],
  "matching is case-sensitive": [
    ["README.md", "readme.md", false],
    ["/Docs/", "docs/a.md", false],
    ["*.JS", "a.js", false],
    ["*.JS", "a.JS", true],
  ],
  "escaped wildcards and spaces are literal": [
    ["f\\*o", "foo", false],
    ["f\\*o", "f*o", true],
    ["f\\?o", "foo", false],
    ["f\\?o", "f?o", true],
    ["path\\ with\\ spaces/", "path with spaces/a.txt", true],
    ["path\\ with\\ spaces/", "path/a.txt", false],
  ],
  "characters special to regular expressions are literal": [
    ["services/foo:bar/**/*", "services/foo:bar/baz.json", true],
    ["services/foo:bar/**/*", "services/foo-bar/baz.json", false],
    ["vllm/v1/worker/^cpu", "vllm/v1/worker/^cpu", true],
    ["vllm/v1/worker/^cpu", "vllm/v1/worker/cpu", false],
    ["file(1).txt", "file(1).txt", true],
    ["file(1).txt", "file1.txt", false],
    ["a+b.txt", "a+b.txt", true],
    ["a+b.txt", "aab.txt", false],
    ["a.b", "axb", false],
    ["foo|bar", "foo", false],
    ["foo|bar", "foo|bar", true],
    ["{a,b}.js", "a.js", false],
    ["{a,b}.js", "{a,b}.js", true],
    ["$HOME", "$HOME", true],
    ["bar/buzz$private$file.txt", "bar/buzz$private$file.txt", true],
    ["foo(.txt", "foo(.txt", true],
    ["bar).txt", "bar).txt", true],
    ["bar^foo.log", "bar^foo.log", true],
    ["test*10.txt", "test*10.txt", true],
    ["test*10.txt", "testtttt*10.txt", true],
    ["\\*-foo.js", "*-foo.js", true],
    ["\\*-foo.js", "a-foo.js", false],
  ],
  "wildcards combine with globstars": [
    ["**/dir/*.*", "bla/dir/file.txt", true],
    ["**/dir/**/*.*", "bla/dir/file.txt", true],
    ["**/dir/**/*.*", "bla/dir/a/b/file.txt", true],
    ["**/dir/**/*.*", "bla/other/file.txt", false],
    ["**/**/a", "a", true],
    ["a/**/**/b", "a/b", true],
    ["*.go", "forgo", false],
    ["*.js", "bar/buzzjs", false],
    ["*.js", "buzz_foo.js", true],
  ],
  "non-ASCII names match themselves": [
    ["/docs/ünïcödé/", "docs/ünïcödé/a.md", true],
    ["日本?.md", "日本語.md", true],
  ],
};

describe("a CODEOWNERS pattern", () => {
  for (const [behaviour, rows] of Object.entries(table)) {
    test(behaviour, () => {
      for (const [pattern, path, owned] of rows) {
        const parsed = parseCodeowners(`${pattern} @owner`);
        expect({ pattern, path, errors: parsed.errors }).toEqual({ pattern, path, errors: [] });
        expect({ pattern, path, owned: parsed.match(path) !== null }).toEqual({ pattern, path, owned });
        expect(parsed.matchNaive(path) !== null).toBe(owned);
      }
    });
  }
});

const GITHUB_EXAMPLE = `# This is a comment.
# Each line is a file pattern followed by one or more owners.
* @global-owner1 @global-owner2

*.js @js-owner #This is an inline comment.
*.go docs@example.com
*.txt @octo-org/octocats
/build/logs/ @doctocat
docs/* docs@example.com
apps/ @octocat
/docs/ @doctocat
/scripts/ @doctocat @octocat
**/logs @octocat
/apps/ @octocat
/apps/github
/apps/ @octocat
/apps/github @doctocat
`;

describe("GitHub's example CODEOWNERS file", () => {
  const parsed = parseCodeowners(GITHUB_EXAMPLE);
  const owners = (path: string) => parsed.match(path)?.owners ?? null;

  test("has no errors", () => expect(parsed.errors).toEqual([]));
  test("global owners own what no later rule matches", () => expect(owners("README.md")).toEqual(["@global-owner1", "@global-owner2"]));
  test("the last matching pattern takes precedence", () => expect(owners("src/index.js")).toEqual(["@js-owner"]));
  test("an inline comment after the owners is ignored", () => expect(parsed.match("a.js")).toEqual({ owners: ["@js-owner"], line: 5 }));
  test("an email address can own files", () => expect(owners("cmd/main.go")).toEqual(["docs@example.com"]));
  test("a team can own files", () => expect(owners("notes/todo.txt")).toEqual(["@octo-org/octocats"]));
  test("a root directory rule covers its subdirectories", () => expect(owners("build/logs/2024/a.bin")).toEqual(["@octocat"]));
  test("a directory pattern without leading slash matches anywhere", () => expect(owners("src/apps/x.rb")).toEqual(["@octocat"]));
  test("/docs/ owns nested files", () => expect(owners("docs/build-app/troubleshooting.md")).toEqual(["@doctocat"]));
  test("several owners on one line are all returned", () => expect(owners("scripts/x.sh")).toEqual(["@doctocat", "@octocat"]));
  test("**/logs owns a logs directory at any depth", () => expect(owners("deeply/nested/logs/x.bin")).toEqual(["@octocat"]));
  test("a later rule gives a subdirectory its own owners", () => expect(owners("apps/github/a.rb")).toEqual(["@doctocat"]));
  test("the rest of /apps/ keeps its owner", () => expect(owners("apps/other/a.rb")).toEqual(["@octocat"]));
});

describe("CODEOWNERS lines", () => {
  test("a pattern without owners makes matching paths unowned", () => {
    const parsed = parseCodeowners("* @all\n/vendor/\n");
    expect(parsed.match("vendor/lib.js")).toEqual({ owners: [], line: 2 });
    expect(parsed.match("src/lib.js")).toEqual({ owners: ["@all"], line: 1 });
  });
  test("a pattern without owners followed by a comment is still unowned", () => {
    expect(parseCodeowners("/vendor/ # nobody").match("vendor/a")).toEqual({ owners: [], line: 1 });
  });
  test("no matching rule gives null", () => expect(parseCodeowners("/src/ @a").match("lib/a.js")).toBeNull());
  test("an empty file matches nothing", () => expect(parseCodeowners("").match("a")).toBeNull());
  test("comments and blank lines are skipped and line numbers stay one-based", () => {
    const parsed = parseCodeowners("# c\n\n   \n\t# indented comment\n*.md @docs\n");
    expect(parsed.match("a.md")).toEqual({ owners: ["@docs"], line: 5 });
    expect(parsed.errors).toEqual([]);
  });
  test("tabs and repeated spaces separate owners", () => {
    expect(parseCodeowners("*.md\t@a  \t @b").match("x.md")?.owners).toEqual(["@a", "@b"]);
  });
  test("leading and trailing whitespace is ignored", () => {
    expect(parseCodeowners("   *.md @a   ").match("x.md")?.owners).toEqual(["@a"]);
  });
  test("CRLF line endings are accepted", () => {
    const parsed = parseCodeowners("*.md @a\r\n*.js @b\r\n");
    expect(parsed.errors).toEqual([]);
    expect(parsed.match("x.js")).toEqual({ owners: ["@b"], line: 2 });
  });
  test("a byte-order mark before the first line is ignored", () => {
    expect(parseCodeowners("\uFEFF*.md @a").match("x.md")?.owners).toEqual(["@a"]);
  });
  test("owners keep the spelling of the file", () => {
    expect(parseCodeowners("* @Octo-Org/Core-Team @MixedCase a.b+c@example.co.uk").match("x")?.owners).toEqual([
      "@Octo-Org/Core-Team",
      "@MixedCase",
      "a.b+c@example.co.uk",
    ]);
  });
  test("paths are repository-relative: a leading slash is not stripped", () => {
    expect(parseCodeowners("/src/ @a").match("/src/a.js")).toBeNull();
    expect(parseCodeowners("*.js @a").match("/src/a.js")?.owners).toEqual(["@a"]);
  });
  test("a path with a trailing slash names a directory", () => {
    const parsed = (pattern: string) => parseCodeowners(`${pattern} @a`);
    expect(parsed("apps/").match("apps/")).not.toBeNull();
    expect(parsed("foo").match("foo/")).not.toBeNull();
    expect(parsed("/foo/").match("foo/")).not.toBeNull();
    expect(parsed("docs/*").match("docs/")).not.toBeNull();
    expect(parsed("foo/*.txt").match("foo/")).toBeNull();
    expect(parsed("foo/b\\ ar/").match("foo/b ar/")).not.toBeNull();
  });
  test("the last matching rule wins even when an earlier rule is more specific", () => {
    const parsed = parseCodeowners("/src/app/main.ts @specific\n*.ts @broad\n");
    expect(parsed.match("src/app/main.ts")).toEqual({ owners: ["@broad"], line: 2 });
  });
});

describe("invalid CODEOWNERS lines", () => {
  const invalid: Record<string, string> = {
    "negation with ! is not supported": "!/docs/ @a",
    "character ranges with [ ] are not supported": "*.[ch] @a",
    "a lone bracket is rejected like a range": "/apps/[param]/file.ts @a",
    "escaping a leading # is not supported": "\\#file_with_pound.rb @a",
    "an escaped # elsewhere is not supported": "a\\#b @a",
    "a # inside a pattern is rejected": "foo#bar @a",
    "an owner without @ or email form is invalid": "*.js owner",
    "an owner with a comment glued to it is invalid": "*.js @a#comment",
    "a team with two slashes is invalid": "*.js @org/team/sub",
    "a bare @ is invalid": "*.js @",
    "an owner with an illegal character is invalid": "*.js @us!er",
    "an email without a domain is invalid": "*.js user@",
    "three asterisks are rejected": "a/***/b @a",
    "an empty segment is rejected": "a//b @a",
    "a lone slash is rejected": "/ @a",
    "a trailing backslash is rejected": "abc\\",
    "an escaped slash is rejected": "secrets\\/keys @a",
    "an escaped slash next to a wildcard is rejected": "/src\\/*.ts @a",
  };
  for (const [behaviour, line] of Object.entries(invalid)) {
    test(behaviour, () => {
      const parsed = parseCodeowners(`* @fallback\n${line}\n`);
      expect(parsed.errors.map((error) => error.line)).toEqual([2]);
      expect(parsed.errors[0]!.message.length).toBeGreaterThan(0);
    });
  }
  test("match skips an invalid line and keeps using the valid ones", () => {
    const parsed = parseCodeowners("* @fallback\n*.js bad-owner\n");
    expect(parsed.match("a.js")).toEqual({ owners: ["@fallback"], line: 1 });
  });
  test("every invalid line is listed with its number", () => {
    const parsed = parseCodeowners("!a @x\nok @y\n[b] @z\n*.c nope\n");
    expect(parsed.errors.map((error) => error.line)).toEqual([1, 3, 4]);
    expect(parsed.rules.map((rule) => rule.line)).toEqual([2]);
  });
  test("an escaped ! or an escaped bracket-free special character is a valid literal", () => {
    const parsed = parseCodeowners("\\!important.txt @a");
    expect(parsed.errors).toEqual([]);
    expect(parsed.match("!important.txt")?.owners).toEqual(["@a"]);
  });
});

describe("owner tokens longer than the forge allows", () => {
  const cases: Record<string, readonly [fits: string, tooLong: string]> = {
    "a user login of more than 39 characters is an invalid line": [`@${"u".repeat(39)}`, `@${"u".repeat(40)}`],
    "an organization login of more than 39 characters makes a team owner an invalid line": [`@${"o".repeat(39)}/core`, `@${"o".repeat(40)}/core`],
    "a team slug of more than 255 characters is an invalid line": [`@acme/${"t".repeat(255)}`, `@acme/${"t".repeat(256)}`],
    "an e-mail address of more than 254 characters is an invalid line": [`${"m".repeat(254 - "@example.com".length)}@example.com`, `${"m".repeat(255 - "@example.com".length)}@example.com`],
  };
  for (const [behaviour, [fits, tooLong]] of Object.entries(cases)) {
    test(behaviour, () => {
      expect(parseCodeowners(`* ${fits}\n`).errors).toEqual([]);
      const parsed = parseCodeowners(`* @fallback\n/src/ ${tooLong}\n`);
      expect(parsed.errors.map((error) => error.line)).toEqual([2]);
      expect(parsed.match("src/a.ts")).toEqual({ owners: ["@fallback"], line: 1 });
    });
  }
  test("the message of an invalid owner quotes a bounded part of the token", () => {
    const parsed = parseCodeowners(`* @${"a-".repeat(1_000_000)}\n`);
    expect(parsed.errors).toHaveLength(1);
    expect(parsed.errors[0]!.message.length).toBeLessThan(200);
    expect(parsed.errors[0]!.message).toContain("invalid owner");
  });
});

describe("parsing work", () => {
  const parseCost = (text: string) => {
    const budget = new MatchBudget(Number.POSITIVE_INFINITY);
    parseCodeowners(text, budget);
    return budget.used;
  };
  const rules = (count: number) => Array.from({ length: count }, (_, i) => `/services/svc-${i}/ @acme/team-${i % 40}`).join("\n");

  test("parsing is charged to the budget in proportion to the file: more rules, more steps", () => {
    expect(parseCost(rules(100))).toBeGreaterThan(0);
    expect(parseCost(rules(10_000))).toBeGreaterThan(50 * parseCost(rules(100)));
  });

  test("comment lines are charged for their size too", () => {
    expect(parseCost(`# ${"c".repeat(10_000)}\n`)).toBeGreaterThan(parseCost("# c\n"));
  });

  test("a budget smaller than the parse stops it with MatchBudgetExceeded", () => {
    const text = rules(1_000);
    const needed = parseCost(text);
    expect(parseCodeowners(text, new MatchBudget(needed)).rules).toHaveLength(1_000);
    expect(() => parseCodeowners(text, new MatchBudget(needed - 1))).toThrow(MatchBudgetExceeded);
  });
});

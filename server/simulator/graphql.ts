// The forge's GraphQL endpoint (POST /graphql), executed with the `graphql` package against the forge's published schema
// (@octokit/graphql-schema): a query that schema does not validate is refused with `errors` as the forge refuses it (HTTP
// 200), so a query the real forge would refuse fails our tests too. Resolvers exist for what the service asks: `node` and
// `nodes` (a pull-request review's `lastEditedAt`). Installation-token auth, faults, rate limits and request counting are
// the REST routes' (simulator.ts), under the route `POST /graphql`.
//
// The schema's introspection JSON (4.8 MB) is embedded as a file (a static import, so the compiled executable carries it,
// outside the bundle and its source map), read and built with buildClientSchema on the first request only: its SDL repeats
// field definitions and does not build with buildSchema. It is imported by its path in the package because the package's
// exports name only its index, which reads the file at run time next to itself (absent beside the executable).
import { readFileSync } from "node:fs";
import { buildClientSchema, graphql, GraphQLError, type GraphQLSchema, type IntrospectionQuery } from "graphql";
import schemaFile from "../../node_modules/@octokit/graphql-schema/schema.json" with { type: "file" };
import { HttpFail, type Ctx, type Result, type Route } from "./route-kit.ts";
import { installationCovers, type ForgeState, type Installation, type PullRequest, type Repository, type Review } from "./model.ts";

let schema: GraphQLSchema | null = null;
/** The forge's published schema, built once. */
export function forgeSchema(): GraphQLSchema {
  schema ??= buildClientSchema(JSON.parse(readFileSync(schemaFile as unknown as string, "utf8")) as IntrospectionQuery);
  return schema;
}

/** A node ID as the simulator's REST shapes write it (shapes.ts): base64 of `<Type>:<database ID>`. */
export function decodeNodeId(id: string): { type: string; id: number } | null {
  const text = Buffer.from(id, "base64").toString("utf8");
  const match = /^([A-Za-z]+):(\d{1,15})$/.exec(text);
  return match && Buffer.from(text).toString("base64") === id ? { type: match[1]!, id: Number(match[2]) } : null;
}

/** The forge's answer for an ID it cannot resolve (or one the installation cannot see): a NOT_FOUND error, the node null. */
function notFound(id: string): GraphQLError {
  return new GraphQLError(`Could not resolve to a node with the global id of '${id}'`, { extensions: { type: "NOT_FOUND" } });
}

function findReview(state: ForgeState, installation: Installation, reviewId: number): { repo: Repository; pr: PullRequest; review: Review } | null {
  for (const repo of state.repos.values()) {
    if (!installationCovers(installation, repo)) continue;
    for (const pr of repo.pulls.values()) {
      const review = pr.reviews.find((r) => r.id === reviewId);
      if (review) return { repo, pr, review };
    }
  }
  return null;
}

function resolveNode(ctx: Ctx, id: unknown): unknown {
  if (ctx.auth.kind !== "token" || typeof id !== "string") return notFound(String(id));
  const decoded = decodeNodeId(id);
  if (decoded?.type !== "PullRequestReview") return notFound(id);
  const found = findReview(ctx.control.state, ctx.auth.installation, decoded.id);
  if (!found) return notFound(id);
  const { review } = found;
  return {
    __typename: "PullRequestReview", id, databaseId: review.id, body: review.body, state: review.state,
    createdAt: review.submittedAt, submittedAt: review.submittedAt, lastEditedAt: review.lastEditedAt ?? null,
    author: { __typename: "User", login: review.userLogin },
    editor: review.editorLogin ? { __typename: "User", login: review.editorLogin } : null,
  };
}

/**
 * `repository(owner:, name:)` as far as the service reads it: its merge queue for a branch (merge-queue.ts; null when the
 * branch has none), whose `entries` page holds at most `first` entries (the forge's bound is 100).
 */
function resolveRepository(ctx: Ctx, owner: string, name: string): unknown {
  const repo = ctx.control.state.repo(owner, name);
  if (ctx.auth.kind !== "token" || !repo || !installationCovers(ctx.auth.installation, repo)) {
    return new GraphQLError(`Could not resolve to a Repository with the name '${owner}/${name}'.`, { extensions: { type: "NOT_FOUND" } });
  }
  return {
    __typename: "Repository", id: Buffer.from(`Repository:${repo.id}`).toString("base64"), name: repo.name,
    mergeQueue: ({ branch }: { branch?: string }) => {
      const entries = ctx.control.mergeQueues.entriesOf(repo, branch ?? repo.defaultBranch);
      if (entries === null) return null;
      return {
        entries: ({ first }: { first?: number }) => {
          const nodes = entries.slice(0, Math.min(first ?? 100, 100));
          return { totalCount: entries.length, nodes, pageInfo: { hasNextPage: nodes.length < entries.length, hasPreviousPage: false, startCursor: null, endCursor: null } };
        },
      };
    },
  };
}

/** An error as the forge writes it: its `type` at the top level (NOT_FOUND, FORBIDDEN, ...), not under `extensions`. */
function forgeError(error: GraphQLError): Record<string, unknown> {
  const { extensions, ...rest } = error.toJSON();
  return { ...(typeof extensions?.type === "string" ? { type: extensions.type } : {}), ...rest };
}

/**
 * The answer broken as a fault asks: `graphql_partial` nulls the first node of `nodes` (or the first field) and adds an
 * error for it (partial data with errors); `graphql_missing_node` nulls it without an error.
 */
function breakAnswer(answer: { data?: Record<string, unknown> | null; errors?: Record<string, unknown>[] }, kind: "graphql_partial" | "graphql_missing_node", type: string) {
  const data = answer.data;
  if (!data) return;
  let path: (string | number)[];
  if (Array.isArray(data.nodes) && data.nodes.length > 0) {
    data.nodes[0] = null;
    path = ["nodes", 0];
  } else {
    const field = Object.keys(data)[0];
    if (field === undefined) return;
    data[field] = null;
    path = [field];
  }
  if (kind === "graphql_partial") (answer.errors ??= []).push({ type, path, message: "Something went wrong while executing your query." });
}

export const GRAPHQL_ROUTE: Route = {
  method: "POST", path: "/graphql", auth: "token",
  async handle(ctx: Ctx): Promise<Result> {
    const body = ctx.body as { query?: unknown; variables?: unknown; operationName?: unknown } | undefined;
    if (typeof body?.query !== "string") throw new HttpFail(400, "A query attribute must be specified and must be a string.");
    const variables = body.variables === undefined || body.variables === null ? undefined : body.variables;
    if (variables !== undefined && (typeof variables !== "object" || Array.isArray(variables))) throw new HttpFail(400, "Variables are invalid JSON.");
    const rootValue = {
      node: ({ id }: { id: unknown }) => resolveNode(ctx, id),
      nodes: ({ ids }: { ids: unknown[] }) => ids.map((id) => resolveNode(ctx, id)),
      repository: ({ owner, name }: { owner: string; name: string }) => resolveRepository(ctx, owner, name),
    };
    const result = await graphql({
      schema: forgeSchema(), source: body.query, rootValue, variableValues: variables as Record<string, unknown> | undefined,
      operationName: typeof body.operationName === "string" ? body.operationName : undefined,
    });
    const answer: { data?: Record<string, unknown> | null; errors?: Record<string, unknown>[] } = {};
    if (result.errors) answer.errors = result.errors.map(forgeError);
    if ("data" in result) answer.data = result.data as Record<string, unknown> | null;
    const fault = ctx.faults.take("POST", "/graphql", 1, ["graphql_partial", "graphql_missing_node"]);
    if (fault) breakAnswer(answer, fault.kind as "graphql_partial" | "graphql_missing_node", fault.errorType ?? "INTERNAL");
    return { status: 200, body: answer, headers: { "x-ratelimit-resource": "graphql" } };
  },
};

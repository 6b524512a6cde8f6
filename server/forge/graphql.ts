// GraphQL queries to the forge: used only where its REST API lacks the fact (a review's edits; a merge queue's entries).
// One bounded query with variables, through the transport (installation token, the governor's pacing and rate-limit
// handling, counted in service_forge_requests_total as kind `graphql`). The forge answers GraphQL errors with HTTP 200, an
// `errors` array and possibly partial `data`: any `errors` entry is incomplete evidence, never a partial answer used as whole.
import type { Gap, GapCause, Lookup, ReviewEdit } from "../evaluation/evidence.ts";
import { MAX_BREAK_GLASS_REQUESTS } from "../policy/bounds.ts";
import { rateLimitDelayMs } from "./errors.ts";
import { gapFromError } from "./pagination.ts";
import type { CallOptions, Transport } from "./transport.ts";
import type { Json } from "./validate.ts";

/** The most bytes of a GraphQL answer read unless the query asks for less: past it the answer is cut off unread. */
export const MAX_GRAPHQL_RESPONSE_BYTES = 256 * 1024;
/**
 * Error types that say the same query would be refused again (the node is not there, or not visible to the App): permanent,
 * so the evaluation publishes its failure instead of retrying. Any other error (a timeout, a rate limit, an unnamed one) is
 * transient.
 */
const PERMANENT_ERROR_TYPES: ReadonlySet<string> = new Set(["NOT_FOUND", "FORBIDDEN"]);
/** Error types named in a gap's detail, at most (the forge's messages are not repeated: they may quote the query's IDs). */
const NAMED_ERROR_TYPES = 3;

export interface GraphqlQuery {
  readonly query: string;
  readonly variables: Readonly<Record<string, unknown>>;
  /** The most bytes of answer read (MAX_GRAPHQL_RESPONSE_BYTES when absent). */
  readonly maxBytes?: number;
}

/** The answer's `data`, whole; or why there is none that can be used. */
export type GraphqlAnswer = { readonly complete: true; readonly data: Json } | Gap;

const gap = (cause: GapCause, detail: string): Gap => ({ complete: false, cause, detail });

/**
 * One GraphQL query. Anything but a 200 whose body is an object with an object `data` and no `errors` is a Gap: the HTTP
 * failure as classified for REST (errors.ts), a body over the bound, a malformed body, or GraphQL errors (their types named).
 * A rate-limited answer (HTTP or a `RATE_LIMITED` error) tells its provider delay to `call.onRateLimit`.
 */
export async function graphqlQuery(t: Transport, installationId: number, request: GraphqlQuery, call?: CallOptions): Promise<GraphqlAnswer> {
  let response;
  try {
    response = await t.graphql(installationId, { query: request.query, variables: request.variables }, { ...call, maxBodyBytes: request.maxBytes ?? MAX_GRAPHQL_RESPONSE_BYTES });
  } catch (error) {
    const failed = gapFromError(error);
    return gap(failed.cause, failed.detail);
  }
  const body = response.data;
  if (typeof body !== "object" || body === null || Array.isArray(body)) return gap("transient", "POST /graphql: the forge sent a truncated or malformed body");
  const { data, errors } = body as Json;
  if (errors !== undefined && errors !== null) {
    const types = (Array.isArray(errors) ? errors : [errors]).map((entry) => {
      const type = typeof entry === "object" && entry !== null ? (entry as Json).type : undefined;
      return typeof type === "string" && /^[A-Z_]{1,40}$/.test(type) ? type : "UNNAMED";
    });
    if (types.includes("RATE_LIMITED")) {
      const delay = rateLimitDelayMs(response.headers, Date.now()) ?? rateLimitDelayMs({ "x-ratelimit-remaining": "0" }, Date.now())!;
      call?.onRateLimit?.(delay);
    }
    const permanent = types.length > 0 && types.every((type) => PERMANENT_ERROR_TYPES.has(type));
    const named = [...new Set(types)].slice(0, NAMED_ERROR_TYPES).join(", ") || "UNNAMED";
    return gap(permanent ? "inconsistent" : "transient", `POST /graphql: the forge answered with errors (${named})`);
  }
  if (typeof data !== "object" || data === null || Array.isArray(data)) return gap("transient", "POST /graphql: the answer has no data");
  return { complete: true, data: data as Json };
}

/** A review asked about: its REST `id` (the answer's `databaseId` must match it) and its `node_id`. */
export interface ReviewNode {
  readonly reviewId: number;
  readonly nodeId: string;
}

/** At most this many reviews in one query: the break-glass requests judged (policy/bounds.ts). */
export const MAX_REVIEW_EDIT_NODES = MAX_BREAK_GLASS_REQUESTS;

export const REVIEW_EDITS_QUERY = `query ReviewEdits($ids: [ID!]!) {
  nodes(ids: $ids) {
    __typename
    ... on PullRequestReview { id databaseId lastEditedAt }
  }
}`;

/** Ten nodes of three scalar fields are well under a kilobyte; this leaves room for the forge's error entries. */
const REVIEW_EDITS_MAX_BYTES = 64 * 1024;
const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * Whether each review's body was ever edited, by one query over their node IDs (at most MAX_REVIEW_EDIT_NODES; the REST
 * review objects do not show edits). Keyed by review ID. The whole query failing, any `errors` entry, a missing node, or a
 * node that is not that review makes every review's answer incomplete: a partial answer is never read as a whole one.
 */
export async function reviewEdits(t: Transport, installationId: number, reviews: readonly ReviewNode[], call?: CallOptions): Promise<Record<string, Lookup<ReviewEdit>>> {
  const asked = reviews.slice(0, MAX_REVIEW_EDIT_NODES);
  const all = (lookup: Lookup<ReviewEdit>) => Object.fromEntries(asked.map((review) => [String(review.reviewId), lookup]));
  if (asked.length === 0) return {};
  const answer = await graphqlQuery(t, installationId, { query: REVIEW_EDITS_QUERY, variables: { ids: asked.map((review) => review.nodeId) }, maxBytes: REVIEW_EDITS_MAX_BYTES }, call);
  if (!answer.complete) return all({ kind: "incomplete", cause: answer.cause, detail: answer.detail });
  const nodes = answer.data.nodes;
  const incomplete = (detail: string) => all({ kind: "incomplete", cause: "inconsistent", detail: `POST /graphql: ${detail}` });
  if (!Array.isArray(nodes) || nodes.length !== asked.length) return incomplete(`the answer has ${Array.isArray(nodes) ? nodes.length : "no"} nodes for ${asked.length} reviews`);
  const found: Record<string, Lookup<ReviewEdit>> = {};
  for (const [index, review] of asked.entries()) {
    const node = nodes[index] as Json | null;
    if (typeof node !== "object" || node === null) return incomplete(`review ${review.reviewId} is missing from the answer`);
    const edited = node.lastEditedAt;
    if (node.__typename !== "PullRequestReview" || node.id !== review.nodeId || node.databaseId !== review.reviewId) return incomplete(`the node answered for review ${review.reviewId} is not that review`);
    if (edited !== null && (typeof edited !== "string" || !ISO_TIMESTAMP.test(edited))) return incomplete(`review ${review.reviewId} has a malformed lastEditedAt`);
    found[String(review.reviewId)] = { kind: "found", value: { lastEditedAt: edited } };
  }
  return found;
}

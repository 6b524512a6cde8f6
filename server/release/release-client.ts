// Release adapter: the eight release operations of spec/release-adapter.md over HTTPS, nothing retried, no redirect
// followed, one connection per request. Standalone by contract: nothing else in the service imports this directory
// (release-imports.test.ts proves it), and the token is supplied only by the caller, never read from the environment.
//
// Classification (spec, "Errors"), in one place (`classify`): reads fail with ControllerError; create, upload and
// publish fail with AmbiguousMutationError whenever the forge may have accepted the write (transport loss after the
// first request byte, 1xx, 408, 5xx, another 2xx, a malformed success, or an upload read failure after the request
// started), and with ControllerError when it certainly did not (other 4xx, redirects and other statuses, failures
// before the request started, invalid arguments).

import fs from "node:fs";
import { AmbiguousMutationError, ControllerError, type FailureReason } from "./errors.ts";
import { exchange, type ExchangeOutcome, type RequestBody } from "./https-exchange.ts";
import { headerValue } from "./http-response.ts";
import { isJsonObject, parseStrictJson, StrictJsonError, type JsonObject, type JsonValue } from "./strict-json.ts";
import {
  checkAsset,
  checkBaseUrl,
  checkCa,
  checkCommit,
  checkMarker,
  checkPage,
  checkReleaseId,
  checkReleaseName,
  checkRepository,
  checkTag,
  checkTimeout,
  checkToken,
  isObjectId,
  percentEncode,
  positiveId,
  type BaseUrl,
  type ReleaseId,
} from "./validate.ts";

export const MEDIA_TYPE = "application/vnd.github+json";
export const API_VERSION = "2026-03-10";
export const API_VERSION_HEADER = "X-GitHub-Api-Version";
export const REQUEST_ID_HEADER = "x-github-request-id";
/** Successful response bodies are refused beyond 8 MiB (spec, "Limits"). */
export const MAX_RESPONSE_BYTES = 8 * 1024 * 1024;
const USER_AGENT = "codeowner-approval-release-adapter";

export interface ReleaseClientOptions {
  token: string;
  /** Exactly `<owner>/<repository>`. */
  repository: string;
  apiUrl: string;
  uploadUrl: string;
  /** Socket-operation timeout in seconds: default 30, greater than 0 and at most 120. */
  timeoutSeconds?: number;
  /** PEM of a private certificate authority; replaces the system roots. */
  ca?: string;
}

export interface DraftPlan {
  tagName: string;
  targetCommit: string;
  name: string;
  marker: string;
}

export interface UploadAsset {
  name: string;
  size: number;
  /** Open, readable descriptor; read by position only, never closed, seeked or reopened. */
  fd: number;
}

export interface ResolvedTag {
  ref: string;
  /** `commit` for a lightweight tag, `tag` for an annotated one. */
  objectType: "commit" | "tag";
  objectId: string;
  /** The commit the tag designates (the annotated tag's target, or the ref's object itself). */
  commit: string;
}

interface Call {
  method: "GET" | "POST" | "PATCH";
  base: BaseUrl;
  path: string;
  query?: string;
  body?: RequestBody;
  contentType?: string;
  mutation: boolean;
  expectedStatus: 200 | 201;
  /** Status and request ID of the successful answer, for errors raised by the additional checks. */
  answered?: { status: number; requestId?: string };
}

/** `secret` is the request's token: the error removes it from every field it carries (errors.ts). */
function failure(secret: string, mutation: boolean, ambiguous: boolean, call: Call, reason: FailureReason, extra: Partial<{ status: number; requestId: string; detail: string }> = {}): Error {
  const f = { reason, method: call.method, path: call.base.path + call.path, ...extra, secret };
  return mutation && ambiguous ? new AmbiguousMutationError(f) : new ControllerError(f);
}

/** Maps one exchange outcome to the parsed body or the error of the spec's table. */
function classify(secret: string, call: Call, outcome: ExchangeOutcome): JsonValue {
  const m = call.mutation;
  switch (outcome.kind) {
    case "transport":
      return fail(failure(secret, m, outcome.requestStarted, call, outcome.timedOut ? "timeout" : "transport"));
    case "upload-read":
      return fail(failure(secret, m, outcome.requestStarted, call, "upload-read", { detail: outcome.detail }));
    case "informational":
      return fail(failure(secret, m, true, call, "informational", ids(outcome.head)));
    case "early-response":
      return fail(failure(secret, m, true, call, "early-response", ids(outcome.head)));
    case "invalid":
      return fail(failure(secret, m, true, call, "invalid-response", { ...(outcome.head ? ids(outcome.head) : {}), detail: outcome.detail }));
    case "status": {
      const s = outcome.head.status;
      const extra = ids(outcome.head);
      if (s >= 300 && s <= 399) return fail(failure(secret, m, false, call, "redirect", extra));
      if (s === 408 || (s >= 500 && s <= 599)) return fail(failure(secret, m, true, call, "status", extra));
      if (s >= 400 && s <= 499) return fail(failure(secret, m, false, call, "status", extra));
      if (s >= 200 && s <= 299) return fail(failure(secret, m, true, call, "unexpected-success", extra));
      return fail(failure(secret, m, false, call, "status", extra));
    }
    case "success":
      call.answered = ids(outcome.head);
      try {
        return parseStrictJson(outcome.body);
      } catch (e) {
        if (!(e instanceof StrictJsonError)) throw e;
        return fail(failure(secret, m, true, call, "invalid-response", { ...ids(outcome.head), detail: "JSON" }));
      }
  }
}

function ids(head: { status: number; headers: Map<string, string[]> }): { status: number; requestId?: string } {
  const requestId = headerValue(head, REQUEST_ID_HEADER);
  return requestId === undefined ? { status: head.status } : { status: head.status, requestId };
}

function fail(error: Error): never {
  throw error;
}

export class ReleaseClient {
  readonly #token: string;
  readonly #owner: string;
  readonly #name: string;
  readonly #repository: string;
  readonly #api: BaseUrl;
  readonly #upload: BaseUrl;
  readonly #timeoutMs: number;
  readonly #ca: string | undefined;

  constructor(options: ReleaseClientOptions) {
    if (typeof options !== "object" || options === null) throw new ControllerError({ reason: "invalid-argument", detail: "options are required" });
    this.#token = checkToken(options.token);
    const repo = checkRepository(options.repository);
    this.#owner = repo.owner;
    this.#name = repo.name;
    this.#repository = repo.fullName;
    this.#api = checkBaseUrl(options.apiUrl, "apiUrl");
    this.#upload = checkBaseUrl(options.uploadUrl, "uploadUrl");
    this.#timeoutMs = checkTimeout(options.timeoutSeconds);
    this.#ca = checkCa(options.ca);
  }

  /** The representation names the repository only: the token never appears in it. */
  toString(): string {
    return `ReleaseClient(${this.#repository})`;
  }

  toJSON(): { repository: string } {
    return { repository: this.#repository };
  }

  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return this.toString();
  }

  get [Symbol.toStringTag](): string {
    return "ReleaseClient";
  }

  async repositoryId(): Promise<ReleaseId> {
    const call = this.#read("");
    const record = this.#object(call, await this.#send(call));
    if (record.full_name !== this.#repository) throw this.#invalid(call, "full_name differs");
    const id = positiveId(record.id);
    if (id === undefined) throw this.#invalid(call, "repository ID");
    return id;
  }

  async resolveTag(tag: string): Promise<ResolvedTag> {
    const name = checkTag(tag);
    const encoded = name.split("/").map(percentEncode).join("/");
    const refCall = this.#read(`/git/ref/tags/${encoded}`);
    const ref = this.#object(refCall, await this.#send(refCall));
    const expectedRef = `refs/tags/${name}`;
    if (ref.ref !== expectedRef) throw this.#invalid(refCall, "ref differs");
    const object = ref.object;
    if (!isJsonObject(object) || !isObjectId(object.sha)) throw this.#invalid(refCall, "ref object");
    if (object.type === "commit") return { ref: expectedRef, objectType: "commit", objectId: object.sha, commit: object.sha };
    if (object.type !== "tag") throw this.#invalid(refCall, "tag does not designate a commit");

    const tagCall = this.#read(`/git/tags/${object.sha}`);
    const annotated = this.#object(tagCall, await this.#send(tagCall));
    if (annotated.sha !== object.sha) throw this.#invalid(tagCall, "tag object ID differs");
    if (annotated.tag !== name) throw this.#invalid(tagCall, "tag name differs");
    const target = annotated.object;
    if (!isJsonObject(target) || !isObjectId(target.sha)) throw this.#invalid(tagCall, "tag target");
    if (target.type !== "commit") throw this.#invalid(tagCall, "tag target is not a commit");
    return { ref: expectedRef, objectType: "tag", objectId: object.sha, commit: target.sha };
  }

  async listReleases(page: number, perPage: number): Promise<JsonObject[]> {
    const p = checkPage(page, perPage);
    const call = this.#read("/releases", `per_page=${p.perPage}&page=${p.page}`);
    return this.#objects(call, await this.#send(call));
  }

  async createDraft(plan: DraftPlan): Promise<JsonObject> {
    if (typeof plan !== "object" || plan === null) throw new ControllerError({ reason: "invalid-argument", detail: "plan is required" });
    const body = {
      tag_name: checkTag(plan.tagName),
      target_commitish: checkCommit(plan.targetCommit),
      name: checkReleaseName(plan.name),
      body: checkMarker(plan.marker),
      draft: true,
      prerelease: false,
      generate_release_notes: false,
      make_latest: "false",
    };
    const call = this.#mutation("POST", "/releases", 201, body);
    return this.#object(call, await this.#send(call));
  }

  async getRelease(id: ReleaseId): Promise<JsonObject> {
    const text = checkReleaseId(id);
    const call = this.#read(`/releases/${text}`);
    const record = this.#object(call, await this.#send(call));
    this.#checkEcho(call, record, text);
    return record;
  }

  async listAssets(id: ReleaseId, page: number, perPage: number): Promise<JsonObject[]> {
    const text = checkReleaseId(id);
    const p = checkPage(page, perPage);
    const call = this.#read(`/releases/${text}/assets`, `per_page=${p.perPage}&page=${p.page}`);
    return this.#objects(call, await this.#send(call));
  }

  async uploadAsset(id: ReleaseId, url: string, asset: UploadAsset): Promise<JsonObject> {
    const text = checkReleaseId(id);
    const path = `/repos/${this.#owner}/${this.#name}/releases/${text}/assets`;
    if (url !== `${this.#upload.text}${path}{?name,label}`) {
      throw new ControllerError({ reason: "invalid-argument", detail: "upload URL does not match the trusted template" });
    }
    const a = checkAsset(asset);
    // Before the request starts, so a wrong descriptor is not an ambiguous failure. fstat neither moves nor closes it.
    let isFile = false;
    try {
      isFile = fs.fstatSync(a.fd).isFile();
    } catch {
      isFile = false;
    }
    if (!isFile) throw new ControllerError({ reason: "invalid-argument", detail: "asset fd must be an open regular file" });
    const call: Call = {
      method: "POST",
      base: this.#upload,
      path,
      query: `name=${percentEncode(a.name)}`,
      body: { kind: "fd", fd: a.fd, size: a.size },
      contentType: "application/octet-stream",
      mutation: true,
      expectedStatus: 201,
    };
    return this.#object(call, await this.#send(call));
  }

  async publishRelease(id: ReleaseId): Promise<JsonObject> {
    const text = checkReleaseId(id);
    const call = this.#mutation("PATCH", `/releases/${text}`, 200, { draft: false, make_latest: "false" });
    const record = this.#object(call, await this.#send(call));
    this.#checkEcho(call, record, text);
    return record;
  }

  #read(suffix: string, query?: string): Call {
    const call: Call = { method: "GET", base: this.#api, path: this.#repoPath(suffix), mutation: false, expectedStatus: 200 };
    if (query !== undefined) call.query = query;
    return call;
  }

  #mutation(method: "POST" | "PATCH", suffix: string, expectedStatus: 200 | 201, body: object): Call {
    return {
      method,
      base: this.#api,
      path: this.#repoPath(suffix),
      body: { kind: "bytes", bytes: Buffer.from(JSON.stringify(body), "utf8") },
      contentType: "application/json",
      mutation: true,
      expectedStatus,
    };
  }

  #repoPath(suffix: string): string {
    return `/repos/${this.#owner}/${this.#name}${suffix}`;
  }

  async #send(call: Call): Promise<JsonValue> {
    const base = call.base;
    const outcome = await exchange({
      hostname: base.hostname,
      port: base.port,
      hostHeader: base.hostHeader,
      method: call.method,
      target: base.path + call.path + (call.query === undefined ? "" : `?${call.query}`),
      headers: [
        ["Accept", MEDIA_TYPE],
        ["Accept-Encoding", "identity"],
        [API_VERSION_HEADER, API_VERSION],
        ["Authorization", `Bearer ${this.#token}`],
        ["User-Agent", USER_AGENT],
      ],
      ...(call.contentType === undefined ? {} : { contentType: call.contentType }),
      ...(call.body === undefined ? {} : { body: call.body }),
      expectedStatus: call.expectedStatus,
      maxBodyBytes: MAX_RESPONSE_BYTES,
      timeoutMs: this.#timeoutMs,
      ...(this.#ca === undefined ? {} : { ca: this.#ca }),
    });
    return classify(this.#token, call, outcome);
  }

  #invalid(call: Call, detail: string): Error {
    return failure(this.#token, call.mutation, true, call, "invalid-response", { ...call.answered, detail });
  }

  #object(call: Call, value: JsonValue): JsonObject {
    if (!isJsonObject(value)) throw this.#invalid(call, "expected an object");
    return value;
  }

  #objects(call: Call, value: JsonValue): JsonObject[] {
    if (!Array.isArray(value)) throw this.#invalid(call, "expected an array");
    const out: JsonObject[] = [];
    for (const item of value) {
      if (!isJsonObject(item)) throw this.#invalid(call, "expected an array of objects");
      out.push(item);
    }
    return out;
  }

  #checkEcho(call: Call, record: JsonObject, requested: string): void {
    const returned = positiveId(record.id);
    if (returned === undefined || returned.toString() !== requested) throw this.#invalid(call, "release ID differs");
  }
}

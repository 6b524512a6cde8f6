// Shared test fixture: one base client configuration against a RawForge, tweaked per test.

import { afterEach, beforeAll, beforeEach, expect } from "bun:test";
import { AmbiguousMutationError, ControllerError, type FailureReason } from "../errors.ts";
import { ReleaseClient, type ReleaseClientOptions } from "../release-client.ts";
import { makeTestPki, type TestPki } from "./pki.ts";
import { RawForge, startSilentPeer } from "./raw-forge.ts";

export const TOKEN = "ghs_TestTokenThatMustNeverLeak0123456789";
export const REPOSITORY = "octo-org/release-target";
export const COMMIT = "0123456789abcdef0123456789abcdef01234567";
export const TAG_OBJECT = "fedcba9876543210fedcba9876543210fedcba98";

export function baseOptions(forge: RawForge, caPem: string): ReleaseClientOptions {
  return { token: TOKEN, repository: REPOSITORY, apiUrl: forge.url, uploadUrl: `${forge.url}/uploads`, timeoutSeconds: 2, ca: caPem };
}

export function makeClient(forge: RawForge, caPem: string, overrides: Partial<ReleaseClientOptions> = {}): ReleaseClient {
  return new ReleaseClient({ ...baseOptions(forge, caPem), ...overrides });
}

/**
 * The HTTPS peer of a test file: one PKI for the file, a fresh RawForge per test (late events of an earlier test's aborted
 * connections cannot reach the next one), and a client pointed at it. `forge` may be replaced by a test; it is stopped after.
 */
export function usePeer(): { pki: TestPki; forge: RawForge; client(overrides?: Partial<ReleaseClientOptions>): ReleaseClient } {
  const peer = {
    pki: undefined as unknown as TestPki,
    forge: undefined as unknown as RawForge,
    client: (overrides: Partial<ReleaseClientOptions> = {}) => makeClient(peer.forge, peer.pki.caPem, overrides),
  };
  beforeAll(() => {
    peer.pki = makeTestPki();
  });
  beforeEach(async () => {
    peer.forge = await RawForge.start(peer.pki);
  });
  afterEach(async () => {
    await peer.forge.stop();
  });
  return peer;
}

export async function failureOf(promise: Promise<unknown>): Promise<ControllerError | AmbiguousMutationError> {
  try {
    await promise;
  } catch (e) {
    if (e instanceof ControllerError || e instanceof AmbiguousMutationError) {
      const text = `${e.message} ${e.stack ?? ""} ${JSON.stringify(e)} ${Bun.inspect(e)}`;
      expect(text).not.toContain(TOKEN);
      expect("cause" in e).toBe(false);
      return e;
    }
    throw e;
  }
  throw new Error("expected the call to fail");
}

export async function expectController(promise: Promise<unknown>, reason: FailureReason, status?: number): Promise<ControllerError> {
  const e = await failureOf(promise);
  expect(e).toBeInstanceOf(ControllerError);
  expect(e.reason).toBe(reason);
  if (status !== undefined) expect(e.status).toBe(status);
  return e as ControllerError;
}

export async function expectAmbiguous(promise: Promise<unknown>, reason: FailureReason, status?: number): Promise<AmbiguousMutationError> {
  const e = await failureOf(promise);
  expect(e).toBeInstanceOf(AmbiguousMutationError);
  expect(e.reason).toBe(reason);
  if (status !== undefined) expect(e.status).toBe(status);
  return e as AmbiguousMutationError;
}

/**
 * Runs `body` with a client pointed at a silent TCP peer used by nothing else, then asserts that no connection was
 * ever opened: the calls in `body` must all be refused before any I/O.
 */
export async function expectNoConnection(caPem: string, body: (client: ReleaseClient, baseUrl: string) => Promise<void>): Promise<void> {
  const peer = await startSilentPeer();
  try {
    const client = new ReleaseClient({ token: TOKEN, repository: REPOSITORY, apiUrl: peer.url, uploadUrl: `${peer.url}/uploads`, timeoutSeconds: 0.3, ca: caPem });
    await body(client, peer.url);
    expect(peer.connections).toBe(0);
  } finally {
    await peer.stop();
  }
}

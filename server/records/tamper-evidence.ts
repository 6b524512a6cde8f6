import { createHash } from "node:crypto";
import canonicalize from "canonicalize";

/**
 * Tamper evidence for the decision and merge records: the canonical bytes of a record and their SHA-256 (its digest), the
 * RFC 6962 Merkle tree hashing over records, and the canonical bytes and hash of a checkpoint. Pure code (no database, no
 * clock): the store computes the same digest inside the statements that write a record (ops/record-digest.ts builds that SQL
 * from RECORD_FIELDS below), `service history verify` recomputes it here, and a signer of checkpoints signs checkpointHash().
 * Everything exported is a stable format: changing a field list, a key or an encoding changes every digest ever written, so
 * it needs a new DIGEST_FORMAT and a verifier that still reads the old one.
 *
 * Canonical bytes of a record: the RFC 8785 (JSON Canonicalization Scheme) serialization, as UTF-8, of one JSON object whose
 * members are
 *   - "format": DIGEST_FORMAT, "kind": "decision" or "merge";
 *   - every stored field of the record listed in RECORD_FIELDS, named as its column, with the column's value: an integer as a
 *     JSON number (every one is below 2^53), text as a JSON string, a flag as true or false, an absent value as null;
 *   - for a field of type "sha256" (the decision's compressed body), "<column>_sha256": the lowercase hexadecimal SHA-256 of
 *     the stored bytes instead of the bytes themselves.
 * Left out: the row's ID and its place in a checkpoint (a checkpoint's leaf binds them, checkpointLeaf below), and the
 * decision's pending token (a random nonce of the publication in flight, no evidence). The digest is the lowercase
 * hexadecimal SHA-256 of those bytes. The JSON is made by the `canonicalize` package (RFC 8785's reference author's
 * implementation) rather than by hand.
 */
export const DIGEST_FORMAT = 1;

export type RecordKind = "decision" | "merge";
/** A column's type in the canonical object (a trailing "?": it may be null). */
export type FieldType = "integer" | "integer?" | "text" | "text?" | "boolean" | "sha256";

/** The stored fields each kind of record's digest covers, by column name. Appending one is a new DIGEST_FORMAT. */
export const RECORD_FIELDS: { readonly [K in RecordKind]: Readonly<Record<string, FieldType>> } = {
  decision: {
    installation_id: "integer", repository_id: "integer", repository_full_name: "text", pull_number: "integer", head_sha: "text",
    shared_generation: "integer", digest: "text", conclusion: "text", break_glass: "boolean", published_at_ms: "integer",
    confirmed_at_ms: "integer?", body_bytes: "integer", body: "sha256",
  },
  merge: {
    installation_id: "integer", repository_id: "integer", repository_full_name: "text", pull_number: "integer", head_sha: "text",
    merge_commit_sha: "text?", merged_by_id: "integer?", merged_by_login: "text?", merged_at_ms: "integer?", decision_id: "integer?",
    decision_conclusion: "text?", unapproved: "boolean", break_glass: "boolean", recovered: "boolean", recorded_at_ms: "integer",
    reset_at_ms: "integer?", base_sha: "text?", enrollment: "text?", settled_at_ms: "integer?",
  },
};

/** The member name a field takes in the canonical object. */
export function memberName(column: string, type: FieldType): string {
  return type === "sha256" ? `${column}_sha256` : column;
}

export function sha256Hex(bytes: Uint8Array | string): string {
  return createHash("sha256").update(bytes).digest("hex");
}

export class CanonicalFormError extends Error {}

function integerOf(column: string, value: unknown): number {
  // PostgreSQL answers bigint as text, SQLite as a number.
  const number = typeof value === "bigint" ? Number(value) : typeof value === "string" && /^-?\d+$/.test(value) ? Number(value) : value;
  if (typeof number !== "number" || !Number.isSafeInteger(number)) throw new CanonicalFormError(`${column} is not an integer`);
  return number;
}

function booleanOf(column: string, value: unknown): boolean {
  // SQLite keeps flags as 0 and 1.
  if (value === true || value === 1) return true;
  if (value === false || value === 0) return false;
  throw new CanonicalFormError(`${column} is not a flag`);
}

/**
 * The canonical object of a record from its stored row (the columns of RECORD_FIELDS, as either database answers them).
 * Throws CanonicalFormError when a value is not of its column's type: such a row was not written by the service.
 */
export function canonicalRecord(kind: RecordKind, row: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const object: Record<string, unknown> = { format: DIGEST_FORMAT, kind };
  for (const [column, type] of Object.entries(RECORD_FIELDS[kind])) {
    const value = row[column];
    const name = memberName(column, type);
    if (value === null || value === undefined) {
      if (!type.endsWith("?")) throw new CanonicalFormError(`${column} is missing`);
      object[name] = null;
    } else if (type === "sha256") {
      if (!(value instanceof Uint8Array)) throw new CanonicalFormError(`${column} is not bytes`);
      object[name] = sha256Hex(value);
    } else if (type.startsWith("integer")) object[name] = integerOf(column, value);
    else if (type === "boolean") object[name] = booleanOf(column, value);
    else if (typeof value === "string") object[name] = value;
    else throw new CanonicalFormError(`${column} is not text`);
  }
  return object;
}

function canonicalBytes(object: unknown): Uint8Array {
  const text = canonicalize(object);
  if (text === undefined) throw new CanonicalFormError("nothing to canonicalize");
  return new TextEncoder().encode(text);
}

/** The record's canonical bytes (above). */
export function canonicalRecordBytes(kind: RecordKind, row: Readonly<Record<string, unknown>>): Uint8Array {
  return canonicalBytes(canonicalRecord(kind, row));
}

/** The record's digest: the lowercase hexadecimal SHA-256 of its canonical bytes. */
export function recordDigest(kind: RecordKind, row: Readonly<Record<string, unknown>>): string {
  return sha256Hex(canonicalRecordBytes(kind, row));
}

/*
 * RFC 6962 section 2.1 Merkle tree hashing: a leaf hashes as SHA-256(0x00 || data), an interior node as
 * SHA-256(0x01 || left || right), the tree of n > 1 leaves splits at the largest power of two below n, and the empty tree's
 * hash is SHA-256 of nothing. Hand-written (a few lines): the registry's Merkle packages build other trees (Bitcoin-style
 * duplicated odd nodes, Ethereum tries), and a checkpoint of a million records needs the root built leaf by leaf.
 */
export function leafHash(data: Uint8Array): Uint8Array {
  return new Uint8Array(createHash("sha256").update(LEAF_PREFIX).update(data).digest());
}

export function nodeHash(left: Uint8Array, right: Uint8Array): Uint8Array {
  return new Uint8Array(createHash("sha256").update(NODE_PREFIX).update(left).update(right).digest());
}

const LEAF_PREFIX = new Uint8Array([0]);
const NODE_PREFIX = new Uint8Array([1]);
export const EMPTY_TREE_HASH: Uint8Array = new Uint8Array(createHash("sha256").digest());

/** The tree hash of these leaf hashes, straight from RFC 6962's definition (for tests and small trees). */
export function merkleRoot(leaves: readonly Uint8Array[]): Uint8Array {
  if (leaves.length === 0) return EMPTY_TREE_HASH;
  if (leaves.length === 1) return leaves[0]!;
  let split = 1;
  while (split * 2 < leaves.length) split *= 2;
  return nodeHash(merkleRoot(leaves.slice(0, split)), merkleRoot(leaves.slice(split)));
}

/**
 * The same tree hash, leaf by leaf in constant memory (one subtree hash per bit of the count): complete subtrees are merged as
 * they fill, and the root folds the remaining ones from the smallest (rightmost) up, which is RFC 6962's split.
 */
export class MerkleTreeBuilder {
  /** Roots of complete subtrees, largest first; stack[i] covers 2^heights[i] leaves. */
  private readonly stack: Uint8Array[] = [];
  private readonly heights: number[] = [];
  private leaves = 0;

  /** Appends one leaf, given as its leaf hash. */
  add(leaf: Uint8Array): void {
    let hash = leaf;
    let height = 0;
    while (this.heights.length > 0 && this.heights[this.heights.length - 1] === height) {
      this.heights.pop();
      hash = nodeHash(this.stack.pop()!, hash);
      height++;
    }
    this.stack.push(hash);
    this.heights.push(height);
    this.leaves++;
  }

  get size(): number {
    return this.leaves;
  }

  root(): Uint8Array {
    if (this.stack.length === 0) return EMPTY_TREE_HASH;
    let hash = this.stack[this.stack.length - 1]!;
    for (let i = this.stack.length - 2; i >= 0; i--) hash = nodeHash(this.stack[i]!, hash);
    return hash;
  }
}

/** A record as a checkpoint covers it: which record, and its digest. */
export type LeafEntry = { readonly kind: RecordKind; readonly id: number; readonly digest: string };

/**
 * A checkpoint leaf's data: the RFC 8785 bytes of {"digest", "id", "kind"}. The leaf binds the record's identity to its
 * digest, so that two records' contents cannot change places (a merge names its decision by ID).
 */
export function checkpointLeaf(entry: LeafEntry): Uint8Array {
  if (!/^[0-9a-f]{64}$/.test(entry.digest)) throw new CanonicalFormError(`the digest of ${entry.kind} ${entry.id} is not a SHA-256`);
  return canonicalBytes({ digest: entry.digest, id: entry.id, kind: entry.kind });
}

export function checkpointLeafHash(entry: LeafEntry): Uint8Array {
  return leafHash(checkpointLeaf(entry));
}

/**
 * A checkpoint: its sequence number (1, 2, …), when it was written, how many records it covers (its leaves, in leaf order),
 * the Merkle root over them, and the hash of the checkpoint before it (null for the first).
 */
export type Checkpoint = {
  readonly id: number;
  readonly createdAtMs: number;
  readonly count: number;
  readonly root: string;
  readonly previous: string | null;
};

/** A checkpoint's canonical bytes: RFC 8785 of {"count", "created_at_ms", "format", "id", "previous", "root"}. */
export function checkpointBytes(checkpoint: Checkpoint): Uint8Array {
  return canonicalBytes({
    count: checkpoint.count, created_at_ms: checkpoint.createdAtMs, format: DIGEST_FORMAT, id: checkpoint.id, previous: checkpoint.previous, root: checkpoint.root,
  });
}

/** The checkpoint's hash (what the next checkpoint chains to, and what an auditor keeps elsewhere): hex SHA-256 of its bytes. */
export function checkpointHash(checkpoint: Checkpoint): string {
  return sha256Hex(checkpointBytes(checkpoint));
}

export function toHex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
}

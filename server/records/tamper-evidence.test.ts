import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import {
  CanonicalFormError, checkpointHash, checkpointLeaf, EMPTY_TREE_HASH, leafHash, MerkleTreeBuilder, merkleRoot, nodeHash, recordDigest, canonicalRecordBytes, toHex,
} from "./tamper-evidence.ts";

// The Certificate Transparency reference leaves and the tree hash of their first n, n = 0..8 (RFC 6962 hashing).
const CT_LEAVES = ["", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f"].map((h) => new Uint8Array(Buffer.from(h, "hex")));
const CT_ROOTS = [
  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
  "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
  "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
  "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
  "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
  "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
  "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
  "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
  "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
];

describe("Merkle tree hashing", () => {
  test("the tree hash of the reference leaves is the published one for every size from 0 to 8", () => {
    const hashes = CT_LEAVES.map(leafHash);
    for (let n = 0; n <= 8; n++) {
      expect(toHex(merkleRoot(hashes.slice(0, n)))).toBe(CT_ROOTS[n]!);
      const builder = new MerkleTreeBuilder();
      for (const leaf of hashes.slice(0, n)) builder.add(leaf);
      expect(toHex(builder.root())).toBe(CT_ROOTS[n]!);
      expect(builder.size).toBe(n);
    }
    expect(toHex(EMPTY_TREE_HASH)).toBe(CT_ROOTS[0]!);
  });

  test("the streamed root equals the recursive definition for every tree shape up to 130 leaves", () => {
    const leaves = Array.from({ length: 130 }, (_, i) => leafHash(new Uint8Array([i, i >> 8, 7])));
    const builder = new MerkleTreeBuilder();
    for (let n = 1; n <= leaves.length; n++) {
      builder.add(leaves[n - 1]!);
      expect(toHex(builder.root())).toBe(toHex(merkleRoot(leaves.slice(0, n))));
    }
  });

  test("a leaf and an interior node over the same bytes hash apart (the 0x00 and 0x01 prefixes)", () => {
    const [a, b] = [leafHash(new Uint8Array([1])), leafHash(new Uint8Array([2]))];
    const joined = new Uint8Array([...a, ...b]);
    expect(toHex(nodeHash(a, b))).not.toBe(toHex(leafHash(joined)));
  });

  test("changing, dropping, adding or swapping a leaf changes the root", () => {
    const leaves = Array.from({ length: 11 }, (_, i) => leafHash(new Uint8Array([i])));
    const root = toHex(merkleRoot(leaves));
    const changed = [...leaves];
    changed[4] = leafHash(new Uint8Array([99]));
    const swapped = [...leaves];
    [swapped[2], swapped[3]] = [swapped[3]!, swapped[2]!];
    for (const other of [changed, leaves.slice(1), [...leaves, leafHash(new Uint8Array([11]))], swapped]) expect(toHex(merkleRoot(other))).not.toBe(root);
  });
});

const decisionRow = (over: Record<string, unknown> = {}) => ({
  installation_id: 4, repository_id: "40", repository_full_name: "acme/web", pull_number: 7, head_sha: "d".repeat(40), shared_generation: 3, digest: "dg1",
  conclusion: "success", break_glass: false, published_at_ms: "1764000000000", confirmed_at_ms: null, body_bytes: 5, body: new Uint8Array([1, 2, 3]), ...over,
});

describe("canonical record bytes", () => {
  test("a decision's canonical bytes are RFC 8785 JSON of its stored fields, the body by its SHA-256", () => {
    expect(new TextDecoder().decode(canonicalRecordBytes("decision", decisionRow()))).toBe(
      '{"body_bytes":5,"body_sha256":"039058c6f2c0cb492c533b0a4d14ef77cc0f78abccced5287d84a1a2011cfb81","break_glass":false,"conclusion":"success",'
        + '"confirmed_at_ms":null,"digest":"dg1","format":1,"head_sha":"dddddddddddddddddddddddddddddddddddddddd","installation_id":4,"kind":"decision",'
        + '"published_at_ms":1764000000000,"pull_number":7,"repository_full_name":"acme/web","repository_id":40,"shared_generation":3}',
    );
  });

  test("both databases' shapes of one row give one digest (bigint as text, flags as 0 and 1)", () => {
    const postgres = decisionRow({ break_glass: true, confirmed_at_ms: "1764000000500" });
    const sqlite = decisionRow({ repository_id: 40, published_at_ms: 1764000000000, break_glass: 1, confirmed_at_ms: 1764000000500 });
    expect(recordDigest("decision", sqlite)).toBe(recordDigest("decision", postgres));
  });

  test("every covered field changes the digest", () => {
    const base = recordDigest("decision", decisionRow());
    for (const [field, value] of Object.entries({ conclusion: "failure", confirmed_at_ms: 9, body: new Uint8Array([1, 2, 4]), repository_full_name: "acme/Web", break_glass: true, shared_generation: 4 })) {
      expect(recordDigest("decision", decisionRow({ [field]: value }))).not.toBe(base);
    }
  });

  test("a decision and a merge never share canonical bytes: the kind is part of them", () => {
    const merge = { installation_id: 4, repository_id: 40, repository_full_name: "acme/web", pull_number: 7, head_sha: "d".repeat(40), merge_commit_sha: null, merged_by_id: null,
      merged_by_login: null, merged_at_ms: null, decision_id: null, decision_conclusion: null, unapproved: true, break_glass: false, recovered: false, recorded_at_ms: 1,
      reset_at_ms: null, base_sha: null, enrollment: null, settled_at_ms: null };
    expect(new TextDecoder().decode(canonicalRecordBytes("merge", merge))).toContain('"kind":"merge"');
  });

  test("a value not of its column's type is refused, not hashed", () => {
    for (const over of [{ conclusion: null }, { pull_number: 1.5 }, { break_glass: "yes" }, { body: "bytes" }, { repository_id: "40x" }, { digest: 5 }]) {
      expect(() => recordDigest("decision", decisionRow(over))).toThrow(CanonicalFormError);
    }
  });

  test("any text is serialized as JSON.stringify escapes it (RFC 8785 strings)", () => {
    fc.assert(fc.property(fc.string({ unit: "grapheme" }), (text) => {
      const bytes = new TextDecoder().decode(canonicalRecordBytes("decision", decisionRow({ repository_full_name: text })));
      expect(bytes).toContain(`"repository_full_name":${JSON.stringify(text)}`);
    }));
  });
});

describe("checkpoints", () => {
  const checkpoint = { id: 2, createdAtMs: 1764000600000, count: 3, root: "a".repeat(64), previous: "b".repeat(64) };

  test("a checkpoint hashes its canonical bytes, and every field is part of them", () => {
    const hash = checkpointHash(checkpoint);
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
    for (const over of [{ id: 3 }, { createdAtMs: 1 }, { count: 4 }, { root: "c".repeat(64) }, { previous: null }]) expect(checkpointHash({ ...checkpoint, ...over })).not.toBe(hash);
  });

  test("a leaf binds the record's kind and ID to its digest", () => {
    const digest = "0".repeat(64);
    expect(new TextDecoder().decode(checkpointLeaf({ kind: "decision", id: 5, digest }))).toBe(`{"digest":"${digest}","id":5,"kind":"decision"}`);
    expect(() => checkpointLeaf({ kind: "merge", id: 5, digest: "xyz" })).toThrow(CanonicalFormError);
  });
});

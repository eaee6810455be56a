// Proves the proof format's pure parts: RFC 8785 payloads that do not depend on key order, the entry hash
// formula, and a chain walk that reports gaps, altered links, reordered links and a cut tail.
import { describe, expect, it } from "vitest";
import type { schemas } from "@treasury/contracts";
import { canonicalPayload, entryHash, GENESIS_HASH, serviceSigningPayload, sha256Hex } from "./canonical.ts";
import { ChainWalk, type StoredLink } from "./chain.ts";

const record: schemas.TransactionRecord = {
  id: "txn_1",
  org_id: "org_1",
  livemode: false,
  transaction_type: "checkout_sale",
  reference_id: "checkout:1",
  amount: 4999,
  currency: "USD",
  description: "Guitar \u00e9 lessons",
  metadata: { z: 1, a: [0.5, "x"] },
  reversal_of: null,
  effective_at: null,
  created_at: "2026-11-25T10:00:00.123Z",
  entries: [{ id: "ent_1", account_id: "a1", account_type: "platform_cash", entity_id: null, entry_type: "debit", amount: 4999 }],
  sale: { sale_reference: "checkout:1", participant_id: "p1", participant_display_name: "Ana", gross: 4999, sales_tax: 0 },
};

function links(n: number): StoredLink[] {
  const out: StoredLink[] = [];
  let previous = GENESIS_HASH;
  for (let sequence = 1; sequence <= n; sequence++) {
    const canonical_payload = `{"n":${sequence}}`;
    const link = { sequence, previous_hash: previous, receipt_hash: sha256Hex(canonical_payload), canonical_payload };
    const entry_hash = entryHash(link);
    out.push({ ...link, entry_hash });
    previous = entry_hash;
  }
  return out;
}

/** Walks `list`; the head is its last link unless given (null: no head row at all). */
function walk(list: StoredLink[], head?: { last_sequence: number; last_entry_hash: string } | null): string[] {
  const w = new ChainWalk();
  for (const l of list) w.add(l);
  w.finish(head === null ? undefined : (head ?? { last_sequence: list.at(-1)?.sequence ?? 0, last_entry_hash: list.at(-1)?.entry_hash ?? GENESIS_HASH }));
  return w.problems;
}

describe("canonical payload", () => {
  it("is RFC 8785 text independent of key order, without the sale's display data", () => {
    // Proves two records differing only in key order give the same bytes, and what the payload leaves out.
    const reordered = { ...record, metadata: { a: [0.5, "x"], z: 1 } };
    expect(canonicalPayload(reordered)).toBe(canonicalPayload(record));
    const text = canonicalPayload(record);
    expect(text.startsWith('{"format":"treasury.ledger_transaction.v1","transaction":{"amount":4999,')).toBe(true);
    expect(text).toContain('"metadata":{"a":[0.5,"x"],"z":1}');
    expect(text).not.toContain("participant_display_name");
    expect(text).toContain("Guitar \u00e9 lessons");
  });

  it("hashes the chain link and signs its place in the chain", () => {
    // Proves the documented formulas, byte for byte.
    const link = { sequence: 3, previous_hash: "b".repeat(64), receipt_hash: "c".repeat(64) };
    expect(entryHash(link)).toBe(sha256Hex(`{"previous_hash":"${"b".repeat(64)}","receipt_hash":"${"c".repeat(64)}","sequence":3}`));
    expect(serviceSigningPayload({ ...link, entry_hash: "d".repeat(64), transaction_id: "txn_9" })).toBe(
      `{"entry_hash":"${"d".repeat(64)}","previous_hash":"${"b".repeat(64)}","receipt_hash":"${"c".repeat(64)}","sequence":3,"transaction_id":"txn_9"}`,
    );
  });
});

describe("chain walk", () => {
  it("accepts a whole chain and an empty one", () => {
    // Proves a sound chain reports nothing.
    expect(walk(links(5))).toEqual([]);
    expect(walk([], null)).toEqual([]);
  });

  it("reports a removed link, an altered payload, a swapped order and a cut tail", () => {
    // Proves each kind of tampering is reported.
    const chain = links(5);
    expect(walk([...chain.slice(0, 2), ...chain.slice(3)])).toEqual(expect.arrayContaining([expect.stringMatching(/sequence 3 is missing/)]));
    const altered = chain.map((l) => (l.sequence === 2 ? { ...l, canonical_payload: '{"n":99}' } : l));
    expect(walk(altered)).toEqual([expect.stringMatching(/sequence 2: receipt_hash does not match/)]);
    const swapped = [chain[0]!, chain[2]!, chain[1]!, chain[3]!, chain[4]!];
    expect(walk(swapped).length).toBeGreaterThan(0);
    expect(walk(chain.slice(0, 4), { last_sequence: 5, last_entry_hash: chain[4]!.entry_hash })).toEqual([expect.stringMatching(/chain head/)]);
    expect(walk(chain, null)).toEqual(["the chain has links but no head"]);
  });
});

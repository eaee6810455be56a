// Reads shared per tenant and turn: callers of one tenant in the same turn get one read, sent after the last of
// them asked; another tenant, or a later turn, reads again; a failed read fails exactly its turn's callers.
import { describe, expect, it } from "vitest";
import { sharedPerTurn } from "./turn-reads.ts";

const a = { orgId: "org_a", livemode: false };
const b = { orgId: "org_b", livemode: false };

describe("sharedPerTurn", () => {
  it("reads once per tenant per turn, after every caller of the turn asked", async () => {
    const asked: string[] = [];
    let version = 0;
    const read = sharedPerTurn(async (t) => {
      asked.push(t.orgId);
      return `${t.orgId}@${version}`;
    });
    const first = [read(a), read(a), read(b)];
    version = 1; // changed after the callers asked, before the turn ended: the shared read sees it
    expect(await Promise.all(first)).toEqual(["org_a@1", "org_a@1", "org_b@1"]);
    expect(asked).toEqual(["org_a", "org_b"]);
    version = 2;
    expect(await read(a)).toBe("org_a@2");
    expect(asked).toEqual(["org_a", "org_b", "org_a"]);
  });

  it("fails the callers of a failed read, and reads again in the next turn", async () => {
    let fail = true;
    const read = sharedPerTurn(async () => {
      if (fail) throw new Error("connection lost");
      return 1;
    });
    const out = await Promise.allSettled([read(a), read(a)]);
    expect(out.map((o) => o.status)).toEqual(["rejected", "rejected"]);
    fail = false;
    expect(await read(a)).toBe(1);
  });
});

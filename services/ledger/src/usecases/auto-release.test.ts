// Proves the auto-release pass against in-memory ports: what is due by each hold's own clock, requests of many
// holds per org and environment, a deterministic reference per set of holds, and a hold a client released meanwhile.
import { cents, HOLDS_PER_POST_MAX } from "@treasury/contracts";
import { beforeEach, describe, expect, it } from "vitest";
import { autoReleaseRequest, KIND_HOLD_AUTO_RELEASE, releaseDueHolds } from "./auto-release.ts";
import { FakeLedger, holdRow, TENANT } from "./fakes.ts";

const WALLET = "00000000-0000-4000-8000-0000000000c1";
const NOW = new Date("2026-03-01T12:00:00Z");
const DAY_MS = 86_400_000;
let f: FakeLedger;

function hold(id: string, untilMs: number, over: Partial<Parameters<typeof holdRow>[0]> = {}): void {
  f.holds.set(id, holdRow({ id, wallet_id: WALLET, amount: cents(10), hold_until: new Date(NOW.getTime() + untilMs), auto_release: true, ...over }));
}

beforeEach(() => {
  f = new FakeLedger();
});

describe("releaseDueHolds", () => {
  it("releases what is due in requests of up to HOLDS_PER_POST_MAX holds per org and environment", async () => {
    const sandboxDue = 2 * HOLDS_PER_POST_MAX + 5;
    for (let i = 0; i < sandboxDue; i++) hold(`hold_${String(i).padStart(3, "0")}`, -1_000);
    hold("hold_live", -1_000, { livemode: true });
    hold("hold_later", DAY_MS);
    hold("hold_manual", -1_000, { auto_release: false });
    const out = await releaseDueHolds(f.deps(), { realNow: () => NOW, advanced: () => new Map() });
    expect(out).toMatchObject({ released: sandboxDue + 1, failed: 0, more: false });
    expect(f.posted.map((p) => [p.request.kind, p.request.livemode, p.request.holds_release.length]).sort()).toEqual(
      [
        [KIND_HOLD_AUTO_RELEASE, false, HOLDS_PER_POST_MAX],
        [KIND_HOLD_AUTO_RELEASE, false, HOLDS_PER_POST_MAX],
        [KIND_HOLD_AUTO_RELEASE, false, 5],
        [KIND_HOLD_AUTO_RELEASE, true, 1],
      ].sort(),
    );
    expect(f.posted.every((p) => p.hooks?.releasedBy === "schedule")).toBe(true);
    expect(f.holds.get("hold_later")?.status).toBe("held");
    expect(f.holds.get("hold_manual")?.status).toBe("held");
  });

  it("reads each sandbox's advance; live runs on real time", async () => {
    hold("hold_sandbox", 3 * DAY_MS);
    hold("hold_live", 3 * DAY_MS, { livemode: true });
    const clock = (days: number) => ({ realNow: () => NOW, advanced: () => new Map([[TENANT.orgId, days * 86_400]]) });
    expect((await releaseDueHolds(f.deps(), clock(2))).released).toBe(0);
    expect((await releaseDueHolds(f.deps(), clock(3))).released).toBe(1);
    expect(f.holds.get("hold_sandbox")?.status).toBe("released");
    expect(f.holds.get("hold_live")?.status).toBe("held");
  });

  it("leaves out a hold a client released after the pass read it, and posts the rest", async () => {
    hold("hold_a", -1_000);
    hold("hold_b", -1_000);
    const deps = f.deps();
    const due = deps.holds.dueForRelease.bind(deps.holds);
    deps.holds.dueForRelease = async (...args) => {
      const rows = await due(...args);
      f.holds.set("hold_a", { ...(f.holds.get("hold_a") ?? holdRow({ id: "hold_a", wallet_id: WALLET })), status: "released" });
      return rows;
    };
    const out = await releaseDueHolds(deps, { realNow: () => NOW, advanced: () => new Map() });
    expect(out).toMatchObject({ released: 1, failed: 0 });
    expect(f.posted.at(-1)?.request.holds_release.map((r) => r.hold_id)).toEqual(["hold_b"]);
  });

  it("names a set of holds by the same reference whatever their order", () => {
    const a = autoReleaseRequest(TENANT, ["hold_2", "hold_1"]);
    const b = autoReleaseRequest(TENANT, ["hold_1", "hold_2"]);
    expect(a.reference_id).toBe(b.reference_id);
    expect(autoReleaseRequest(TENANT, ["hold_1"]).reference_id).not.toBe(a.reference_id);
  });
});

// Proves refund request expiry on in-memory fakes: a request carries its org's deadline; a pass expires a sandbox
// request once its org's clock passed the deadline (and not a live one, nor one of another org), once however often
// it runs, in batches; an approve, reject or cancel of a request past its deadline expires it and answers 409
// invalid_state_transition; the expiry emits one refund_request.cancelled saying the schedule cancelled it and
// asks the ledger for nothing.
import { DomainError, type Tenant } from "@treasury/contracts";
import { describe, expect, it } from "vitest";
import { expireDueRequests } from "./expire-requests.ts";
import { fakeDeps, type FakeDeps } from "./fakes.ts";
import { approveRefundRequest, createRefundRequest, decideRefundRequest, getRefundRequest } from "./refund-requests.ts";

const sandbox: Tenant = { orgId: "org_a", livemode: false };
const live: Tenant = { orgId: "org_a", livemode: true };
const otherSandbox: Tenant = { orgId: "org_b", livemode: false };
const DAY_S = 86_400;

async function created(deps: FakeDeps, tenant: Tenant = sandbox): Promise<string> {
  const { request } = await createRefundRequest(deps, tenant, { sale_reference: "sale_1", amount: 100, reason: "broken" });
  return request.id;
}

function pass(deps: FakeDeps, batchMax = 500): Promise<number> {
  return expireDueRequests(deps, { realNow: deps.now, advanced: () => deps.clocks.reading().advanced }, { batchMax });
}

async function refusal(p: Promise<unknown>): Promise<DomainError> {
  const e: unknown = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!(e instanceof DomainError)) throw new Error(`expected a DomainError, got ${String(e)}`);
  return e;
}

const cancelledEvents = (deps: FakeDeps) => deps.store.events.filter((e) => e.type === "refund_request.cancelled");

describe("expires_at", () => {
  it("is the org's now plus the time to live, on the sandbox clock when it was advanced", async () => {
    const deps = fakeDeps();
    deps.clocks.advance(sandbox.orgId, 10 * DAY_S);
    const id = await created(deps);
    const { request } = await getRefundRequest(deps, sandbox, id);
    const createdOnClock = request.created_at.getTime() + 10 * DAY_S * 1000;
    // The fake clock moves a second per reading: the deadline was read right after created_at.
    expect(request.expires_at.getTime() - createdOnClock - 30 * DAY_S * 1000).toBeLessThanOrEqual(2_000);
    expect(request.expires_at.getTime() - createdOnClock - 30 * DAY_S * 1000).toBeGreaterThanOrEqual(0);
  });
});

describe("the expiry pass", () => {
  it("expires a sandbox request once its org's clock passed the deadline, once, and leaves live and other orgs alone", async () => {
    const deps = fakeDeps();
    const id = await created(deps);
    const liveId = await created(deps, live);
    const otherId = await created(deps, otherSandbox);
    deps.clocks.advance(sandbox.orgId, 29 * DAY_S);
    expect(await pass(deps)).toBe(0);
    deps.clocks.advance(sandbox.orgId, 2 * DAY_S);
    expect(await pass(deps)).toBe(1);
    expect(await pass(deps)).toBe(0);

    const { request } = await getRefundRequest(deps, sandbox, id);
    expect(request).toMatchObject({ status: "cancelled", cancelled_by: "schedule", cancellation_reason: "expired", refund_id: null });
    // Stamped on the org's clock: at or past the deadline, not at real time.
    expect(request.cancelled_at?.getTime()).toBeGreaterThanOrEqual(request.expires_at.getTime());
    expect((await getRefundRequest(deps, live, liveId)).request.status).toBe("created");
    expect((await getRefundRequest(deps, otherSandbox, otherId)).request.status).toBe("created");
    expect(cancelledEvents(deps)).toEqual([
      {
        type: "refund_request.cancelled",
        org_id: "org_a",
        livemode: false,
        data: expect.objectContaining({ id, cancelled_by: "schedule", cancellation_reason: "expired" }),
      },
    ]);
    expect(deps.ledger.posts).toEqual([]);
  });

  it("runs batch after batch until fewer than a batch are due, each request's event once", async () => {
    const deps = fakeDeps();
    const ids = [];
    for (let i = 0; i < 7; i++) ids.push(await created(deps));
    deps.clocks.advance(sandbox.orgId, 31 * DAY_S);
    expect(await pass(deps, 3)).toBe(7);
    expect(
      cancelledEvents(deps)
        .map((e) => e.data["id"])
        .sort(),
    ).toEqual([...ids].sort());
  });
});

describe("a move of a request past its deadline", () => {
  for (const action of ["approve", "reject", "cancel"] as const) {
    it(`${action}: expires it, answers 409 invalid_state_transition with the cancelled request, and moves no money`, async () => {
      const deps = fakeDeps();
      const id = await created(deps);
      deps.clocks.advance(sandbox.orgId, 31 * DAY_S);
      const move = action === "approve" ? approveRefundRequest(deps, sandbox, id, {}) : decideRefundRequest(deps, sandbox, id, action, { reason: "late" });
      const e = await refusal(move);
      expect(e.code).toBe("invalid_state_transition");
      expect(e.extra).toMatchObject({ state: "cancelled", refund_request: { id, status: "cancelled", cancelled_by: "schedule" } });
      expect((await getRefundRequest(deps, sandbox, id)).request).toMatchObject({ status: "cancelled", cancellation_reason: "expired" });
      expect(cancelledEvents(deps)).toHaveLength(1);
      expect(deps.ledger.posts).toEqual([]);
      // Expired stays expired: the pass finds nothing, a second move is refused without a second event.
      expect(await pass(deps)).toBe(0);
      expect((await refusal(decideRefundRequest(deps, sandbox, id, "cancel", {}))).code).toBe("invalid_state_transition");
      expect(cancelledEvents(deps)).toHaveLength(1);
    });
  }

  it("a client's cancel before the deadline says cancelled_by api, and the pass leaves it alone", async () => {
    const deps = fakeDeps();
    const id = await created(deps);
    const cancelled = await decideRefundRequest(deps, sandbox, id, "cancel", { reason: "buyer withdrew" });
    expect(cancelled).toMatchObject({ status: "cancelled", cancelled_by: "api", cancellation_reason: "buyer withdrew" });
    deps.clocks.advance(sandbox.orgId, 31 * DAY_S);
    expect(await pass(deps)).toBe(0);
    expect(cancelledEvents(deps)).toHaveLength(1);
  });
});

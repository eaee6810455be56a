/**
 * The webhooks service's operator commands (ADR 0016). Webhook replay: the same re-send a merchant gets from
 * `POST /v1/webhooks {action: "replay"}` (same webhook-id, same body bytes, one more attempt now), for support
 * cases where the merchant's key is not at hand; the delivery is made due in the transaction that writes its
 * audit row, and the workers are woken at commit. Signing key rotation: a new active Ed25519 key, the previous
 * ones kept for the overlap, in the transaction of its audit row.
 */
import { DomainError, tenantOf } from "@treasury/contracts";
import { flag, requiredFlag, type AdminCommand, type Sealer, type Service, type Sql, type Tx } from "@treasury/service-kit";
import { presentDelivery } from "../domain/present.ts";
import { deliveryOwner, findDelivery, makeDueNow } from "../store/deliveries.ts";
import { signingKeyTx } from "../store/signing-keys.ts";
import { rotateSigningKey, type SigningKeys } from "../usecases/signing-keys.ts";

export interface AdminDeps {
  sealer: Sealer | undefined;
  signingKeys: Pick<SigningKeys, "invalidate">;
  /** The overlap when the command names none (WEBHOOK_SIGNING_KEY_OVERLAP_MS). */
  overlapMs: number;
}

/** The longest overlap a rotation may ask for: 90 days. */
const OVERLAP_HOURS_MAX = 90 * 24;

function transactionOf(q: Sql | Tx): Tx {
  if (!("savepoint" in q)) throw new Error("this command runs inside the transaction of its audit row");
  return q;
}

function notFound(id: string): DomainError {
  return new DomainError("webhook_delivery_not_found", `Webhook delivery ${id} not found`);
}

async function replay(tx: Tx, id: string): Promise<Record<string, unknown>> {
  const owner = await deliveryOwner(tx, id);
  if (owner === undefined) throw notFound(id);
  const tenant = tenantOf(owner);
  const row = await findDelivery(tx, tenant, id, { forUpdate: true });
  if (row === undefined) throw notFound(id);
  // An attempt in flight is already sending it; a second one now would race it.
  if (row.lease_until !== null && row.lease_until > new Date()) return { delivery: presentDelivery(row), replayed: false };
  const due = await makeDueNow(tx, tenant, id, 1);
  return { delivery: presentDelivery(due ?? row), replayed: true };
}

const webhooksReplay: AdminCommand<{ delivery: string }> = {
  decode(request) {
    const delivery = requiredFlag(request, "delivery");
    // A receiver is sent something again only for a stated reason (a support case, an incident).
    if (request.reason === undefined || request.reason === "") throw new DomainError("validation_error", "missing --reason");
    return { delivery };
  },
  audit: {
    atomic: true,
    target: async ({ request }, _result, q) => {
      const id = flag(request, "delivery");
      const d = id === undefined ? undefined : await deliveryOwner(q, id);
      return { orgId: d?.org_id ?? null, livemode: d?.livemode ?? null, targetIds: [id, d?.event_id, d?.endpoint_id] };
    },
  },
  run: (call) => replay(transactionOf(call.q), call.input.delivery),
};

/** `--overlap-hours N` (0 drops every previous key now: a key that leaked), or the configured overlap. */
function overlapOf(request: Parameters<AdminCommand<unknown>["decode"]>[0], defaultMs: number): number {
  const raw = flag(request, "overlap-hours");
  if (raw === undefined) return defaultMs;
  const hours = Number(raw);
  if (!/^\d+$/.test(raw) || hours > OVERLAP_HOURS_MAX)
    throw new DomainError("validation_error", `--overlap-hours must be a whole number from 0 to ${OVERLAP_HOURS_MAX}`);
  return hours * 3600 * 1000;
}

function rotateKey(deps: AdminDeps): AdminCommand<{ overlapMs: number }> {
  return {
    decode(request) {
      const overlapMs = overlapOf(request, deps.overlapMs);
      // The key every ed25519 receiver trusts changes only for a stated reason (a schedule, a suspected leak).
      if (request.reason === undefined || request.reason === "") throw new DomainError("validation_error", "missing --reason");
      return { overlapMs };
    },
    audit: {
      atomic: true,
      target: (_seen, result) => {
        const r = result as { kid?: string; previous?: Array<{ kid: string; expires_at: string }>; overlap_seconds?: number } | undefined;
        return {
          targetIds: [r?.kid, ...(r?.previous ?? []).map((p) => p.kid)],
          details: r === undefined ? {} : { kid: r.kid, previous: r.previous, overlap_seconds: r.overlap_seconds },
        };
      },
    },
    run: async (call) => {
      const result = await rotateSigningKey(signingKeyTx(transactionOf(call.q)), deps.sealer, call.input.overlapMs);
      // This replica signs with the new key from its next attempt; others within SIGNING_KEYS_REFRESH_MS.
      deps.signingKeys.invalidate();
      return { ...result };
    },
  };
}

export function registerAdminCommands(svc: Pick<Service, "handleAdmin">, deps: AdminDeps): void {
  svc.handleAdmin("webhooks replay", webhooksReplay);
  svc.handleAdmin("webhooks rotate-signing-key", rotateKey(deps));
}

/**
 * Webhook replay for operators: the same re-send a merchant gets from `POST /v1/webhooks {action: "replay"}`
 * (same webhook-id, same body bytes, one more attempt now), for support cases where the merchant's key is not at
 * hand. The delivery is made due in the transaction that writes its audit row; the workers are woken at commit.
 */
import { DomainError, tenantOf } from "@treasury/contracts";
import { flag, requiredFlag, type AdminCommand, type Service, type Sql, type Tx } from "@treasury/service-kit";
import { presentDelivery } from "../domain/present.ts";
import { deliveryOwner, findDelivery, makeDueNow } from "../store/deliveries.ts";

function transactionOf(q: Sql | Tx): Tx {
  if (!("savepoint" in q)) throw new Error("webhooks replay runs inside the transaction of its audit row");
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

export function registerAdminCommands(svc: Pick<Service, "handleAdmin">): void {
  svc.handleAdmin("webhooks replay", webhooksReplay);
}

/**
 * Webhook replay for operators: the same re-send a merchant gets from `POST /v1/webhooks {action: "replay"}`
 * (same webhook-id, same body bytes, one more attempt now), for support cases where the merchant's key is not at
 * hand. The delivery is made due in the transaction that writes its audit row; the workers are woken at commit.
 */
import type postgres from "postgres";
import { DomainError, tenantOf } from "@treasury/contracts";
import { presentDelivery } from "../../services/webhooks/src/domain/present.ts";
import { findDelivery, makeDueNow } from "../../services/webhooks/src/store/deliveries.ts";
import type { Commands } from "./command.ts";
import { need, type Q } from "./context.ts";

function transactionOf(q: Q): postgres.TransactionSql {
  if (!("savepoint" in q)) throw new Error("webhooks replay runs inside the transaction of its audit row");
  return q;
}

async function deliveryScope(q: Q, id: string | undefined): Promise<{ org_id: string; livemode: boolean; event_id: string; endpoint_id: string } | undefined> {
  if (id === undefined) return undefined;
  const [row] = await q<{ org_id: string; livemode: boolean; event_id: string; endpoint_id: string }[]>`
    select org_id, livemode, event_id, endpoint_id from webhooks.deliveries where id = ${id}`;
  return row;
}

export const webhooksCommands: Commands = {
  "webhooks replay": {
    usage: "webhooks replay --delivery whd_… --reason TEXT   → {delivery}: sent again now, same webhook-id and body (one in flight is left as it is)",
    audit: {
      action: "webhooks.replay",
      atomic: true,
      target: async (ctx, q) => {
        const d = await deliveryScope(q, ctx.values.delivery);
        const ids = [ctx.values.delivery, d?.event_id, d?.endpoint_id].filter((x): x is string => x !== undefined);
        return { orgId: d?.org_id ?? null, livemode: d?.livemode ?? null, targetIds: ids };
      },
    },
    async run(ctx) {
      const id = need(ctx.values.delivery, "--delivery");
      // A receiver is sent something again only for a stated reason (a support case, an incident).
      need(ctx.reason, "--reason");
      const tx = transactionOf(ctx.q);
      const d = await deliveryScope(tx, id);
      if (d === undefined) throw new DomainError("webhook_delivery_not_found", `Webhook delivery ${id} not found`);
      const tenant = tenantOf(d);
      const row = await findDelivery(tx, tenant, id, { forUpdate: true });
      if (row === undefined) throw new DomainError("webhook_delivery_not_found", `Webhook delivery ${id} not found`);
      // An attempt in flight is already sending it; a second one now would race it.
      if (row.lease_until !== null && row.lease_until > new Date()) return { delivery: presentDelivery(row), replayed: false };
      const due = await makeDueNow(tx, tenant, id, 1);
      return { delivery: presentDelivery(due ?? row), replayed: true };
    },
  },
};

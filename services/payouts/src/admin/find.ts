/**
 * The payouts rows `admin find` reaches: a payout by its id with the ACH file it went in, and the ledger
 * transactions of its steps as `ledger_reference` nodes the ledger answers (found by their deterministic
 * references even before this service recorded a transaction id) and its risk evaluation as a `risk_key` node; and, for a participant asked for itself (the
 * ledger's `participant_lists` node), its bank account and latest payouts. Sealed values and request hashes are
 * never part of a hit.
 */
import type { FindHit, FindNode, FindRowsReply, FindRowsRequest } from "@treasury/contracts";
import { hitsOf, scopedIds, type AdminFinder, type Sql } from "@treasury/service-kit";
import { PAYOUT_KIND, payoutRiskKey } from "../usecases/request-payout.ts";
import { RETURN_KIND, returnReference, SETTLEMENT_KIND, settlementReference } from "../usecases/transitions.ts";

/** A participant's payouts listed when it is asked for: the newest ones. */
const LIST_LIMIT = 20;

const OMIT = {
  payouts: ["request_hash", "dest_sealed"],
  achFiles: ["sealed_content"],
  bankAccounts: ["sealed"],
} as const;

interface PayoutKeys {
  id: string;
  org_id: string;
  livemode: boolean;
  ledger_reference: string;
  reference_id: string;
}

/**
 * The ledger transactions of a payout's request, settlement and return, each by its kind and reference, and the
 * risk evaluation it was asked under (risk answers `risk_key` nodes).
 */
function pathNodes(p: PayoutKeys): FindNode[] {
  const scope = { orgId: p.org_id, livemode: p.livemode };
  return [
    ...[
      { kind: PAYOUT_KIND, reference: p.ledger_reference },
      { kind: SETTLEMENT_KIND, reference: settlementReference(p) },
      { kind: RETURN_KIND, reference: returnReference(p) },
    ].map((t) => ({ kind: "ledger_reference", id: `${t.kind}|${t.reference}`, scope })),
    { kind: "risk_key", id: payoutRiskKey(p.reference_id), scope },
  ];
}

/** Payouts by id with their ACH files; an unscoped node comes back with its row's org and environment. */
async function payouts(sql: Sql, nodes: readonly FindNode[]): Promise<FindRowsReply> {
  const asked = nodes.filter((n) => n.kind === "payout");
  if (asked.length === 0) return { hits: [], nodes: [] };
  const rows = await sql`select * from payouts.payouts where id = any(${[...new Set(asked.map((n) => n.id))]}::text[])`;
  const fileIds = [...new Set(rows.map((r) => r["ach_file_id"] as string | null).filter((f): f is string => f !== null))];
  const files =
    fileIds.length === 0
      ? []
      : hitsOf("payouts.ach_files", await sql`select * from payouts.ach_files where id = any(${fileIds}::int8[])`, false, OMIT.achFiles);
  const unscoped = new Set(asked.filter((n) => n.scope === undefined).map((n) => n.id));
  const keys = rows as unknown as PayoutKeys[];
  return {
    hits: [...hitsOf("payouts.payouts", rows, true, OMIT.payouts), ...files],
    nodes: [
      ...keys.flatMap(pathNodes),
      ...keys.filter((p) => unscoped.has(p.id)).map((p) => ({ kind: "payout", id: p.id, scope: { orgId: p.org_id, livemode: p.livemode } })),
    ],
  };
}

/** A participant's bank account and latest payouts: context, not path. */
async function participantLists(sql: Sql, nodes: readonly FindNode[]): Promise<FindHit[]> {
  const out: FindHit[] = [];
  for (const { scope, ids } of scopedIds(nodes, "participant_lists")) {
    const env = scope.livemode === undefined ? sql`` : sql`and livemode = ${scope.livemode}`;
    const accounts = await sql`select * from payouts.bank_accounts where org_id = ${scope.orgId} ${env} and participant_id = any(${ids}::text[])`;
    out.push(...hitsOf("payouts.bank_accounts", accounts, false, OMIT.bankAccounts));
    for (const id of new Set(ids)) {
      const latest = await sql`
        select * from payouts.payouts where org_id = ${scope.orgId} ${env} and participant_id = ${id} order by created_at desc limit ${LIST_LIMIT}`;
      out.push(...hitsOf("payouts.payouts", latest, false, OMIT.payouts));
    }
  }
  return out;
}

export function pgPayoutsFinder(sql: Sql): AdminFinder {
  return {
    rows: async (r: FindRowsRequest): Promise<FindRowsReply> => {
      const found = await payouts(sql, r.nodes);
      return { hits: [...found.hits, ...(await participantLists(sql, r.nodes))], nodes: found.nodes };
    },
  };
}

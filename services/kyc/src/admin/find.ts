/**
 * The kyc rows `admin find` reaches: a submission and its review trail by the submission's id, the submission a
 * request sent, an org's business verifications (asked for the org itself) and a participant's creator
 * verifications (the ledger's `participant_lists` node). Personal data (`pii`) is never part of a hit.
 */
import type { FindHit, FindNode, FindRowsReply, FindRowsRequest } from "@treasury/contracts";
import { hitsOf, scopedIds, type AdminFinder, type Sql } from "@treasury/service-kit";

const SUBMISSION_OMIT = ["pii"] as const;

const idsOf = (nodes: readonly FindNode[], kind: string): string[] => [...new Set(nodes.filter((n) => n.kind === kind).map((n) => n.id))];

/** Submissions by id with their review trail; an unscoped node comes back with its row's org and environment. */
async function submissions(sql: Sql, nodes: readonly FindNode[]): Promise<FindRowsReply> {
  const ids = idsOf(nodes, "kyc_submission");
  if (ids.length === 0) return { hits: [], nodes: [] };
  const rows = await sql`select * from kyc.submissions where id = any(${ids}::text[])`;
  const actions = await sql`select * from kyc.review_actions where submission_id = any(${ids}::text[]) order by id`;
  const unscoped = new Set(nodes.filter((n) => n.kind === "kyc_submission" && n.scope === undefined).map((n) => n.id));
  return {
    hits: [...hitsOf("kyc.submissions", rows, true, SUBMISSION_OMIT), ...hitsOf("kyc.review_actions", actions, true)],
    nodes: rows
      .filter((r) => unscoped.has(String(r["id"])))
      .map((r) => ({ kind: "kyc_submission", id: String(r["id"]), scope: { orgId: String(r["org_id"]), livemode: r["livemode"] === true } })),
  };
}

async function requests(sql: Sql, nodes: readonly FindNode[]): Promise<FindHit[]> {
  const ids = idsOf(nodes, "request");
  if (ids.length === 0) return [];
  return hitsOf("kyc.submissions", await sql`select * from kyc.submissions where request_id = any(${ids}::text[])`, true, SUBMISSION_OMIT);
}

/** An org asked for itself: its business verifications, context rather than path. */
async function orgs(sql: Sql, nodes: readonly FindNode[], seed: boolean): Promise<FindHit[]> {
  const ids = idsOf(nodes, "org");
  if (!seed || ids.length === 0) return [];
  return hitsOf("kyc.business_verifications", await sql`select * from kyc.business_verifications where org_id = any(${ids}::text[])`, false);
}

async function participantLists(sql: Sql, nodes: readonly FindNode[]): Promise<FindHit[]> {
  const out: FindHit[] = [];
  for (const { scope, ids } of scopedIds(nodes, "participant_lists")) {
    const env = scope.livemode === undefined ? sql`` : sql`and livemode = ${scope.livemode}`;
    const rows = await sql`select * from kyc.creator_verifications where org_id = ${scope.orgId} ${env} and participant_id = any(${ids}::text[])`;
    out.push(...hitsOf("kyc.creator_verifications", rows, false));
  }
  return out;
}

export function pgKycFinder(sql: Sql): AdminFinder {
  return {
    rows: async (r: FindRowsRequest): Promise<FindRowsReply> => {
      const found = await submissions(sql, r.nodes);
      const hits = [...found.hits, ...(await requests(sql, r.nodes)), ...(await orgs(sql, r.nodes, r.seed)), ...(await participantLists(sql, r.nodes))];
      return { hits, nodes: found.nodes };
    },
  };
}

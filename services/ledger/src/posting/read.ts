/**
 * Step 2 of the posting transaction (commit.ts): everything a batch names, read and locked in one round trip (two
 * when a request that runs alone releases holds or its extension names accounts by id), in the one lock order:
 * sales, then wallets in ascending id order, then holds. A batch whose wallets are all remembered (wallet-cache.ts)
 * locks nothing here: its write is guarded by the rows' versions instead.
 */
import type { Tenant } from "@treasury/contracts";
import type { ReservedSql } from "postgres";
import type { Side } from "../domain/accounts.ts";
import type { RefundPlan } from "../domain/refund.ts";
import { accountKinds } from "../store/accounts.ts";
import {
  claimsByKey,
  lockHoldsAnyScope,
  lockSalesAnyScope,
  lockWalletsAnyScope,
  participantWallets,
  receivables,
  type ExistingClaim,
  type LockedSale,
  type LockedWallet,
} from "../store/batch-reads.ts";
import { findHoldsByIds, lockHolds } from "../store/holds.ts";
import type { HoldRow } from "../usecases/rows.ts";
import type { Derived } from "../usecases/ports.ts";
import { scopeKey, type CommitOptions, type Pending, type SoloClaim } from "./pending.ts";
import { settled, type Settled } from "./statements.ts";
import type { WalletCache } from "./wallet-cache.ts";

/** What the read step found, for every request of the batch. */
export interface Rows {
  participants: Map<string, string>;
  locked: LockedWallet[];
  holds: Map<string, LockedHold>;
  /** Sales the batch refunds, locked, by scopeKey(org, env, sale reference). */
  sales: Map<string, LockedSale>;
  claims: ExistingClaim[];
  owed: Map<string, { id: string; outstanding: number }>;
  existingParticipants: Set<string>;
  /** Normal sides of system accounts an extension named by id. */
  systemNormals: Map<string, Side>;
}

export type LockedHold = Pick<HoldRow, "id" | "wallet_id" | "participant_id" | "amount" | "status" | "release_id">;

type ParticipantKey = { orgId: string; livemode: boolean; participantId: string };

/** What the requests name: participants (their creator wallets), release-transfer targets, wallets by id. */
interface Names {
  parts: Map<string, ParticipantKey>;
  targets: Map<string, ParticipantKey>;
  ids: Set<string>;
  systemNormals: Map<string, Side>;
}

/** Refunds: their sales (locked first), the creator wallet and the sale's source (when a wallet), its hold. */
interface RefundNames {
  plans: RefundPlan[];
  saleKeys: { orgId: string; livemode: boolean; saleReference: string }[];
  planHolds: string[];
}

/** What a request that runs alone adds: its tenant, the holds it locks, the accounts its extension named by id. */
interface SoloNames {
  scope: Tenant | undefined;
  holdIds: string[];
  derivedIds: string[];
}

const NOT_ALONE: SoloNames = { scope: undefined, holdIds: [], derivedIds: [] };

/** The statements' results, in the order lockStatements sends them. */
type Locked = Settled<ReturnType<typeof lockStatements>>;

/**
 * The batch's rows. Awaits what the transaction must wait for and nothing more: a solo request's plain read of its
 * holds' wallets and extension's accounts (when it names any), the one locking round trip, and the receivables of
 * creators named by wallet id (when there are any).
 */
export async function readRows(
  conn: ReservedSql,
  begin: () => Promise<unknown>,
  list: readonly Pending[],
  solo: SoloClaim | undefined,
  cache: WalletCache,
  opts: CommitOptions,
  used: { cache: boolean },
): Promise<Rows> {
  const names = namesOf(list);
  const refunds = refundNames(list, names);
  const alone = solo === undefined ? NOT_ALONE : soloNames(list, solo);
  if (alone.scope !== undefined && (alone.holdIds.length > 0 || alone.derivedIds.length > 0)) {
    const [, seen, kinds] = await settled([begin(), findHoldsByIds(conn, alone.scope, alone.holdIds), accountKinds(conn, alone.scope, alone.derivedIds)]);
    for (const h of seen) names.ids.add(h.wallet_id);
    for (const k of kinds) {
      if (k.is_wallet) names.ids.add(k.id);
      else names.systemNormals.set(k.id, k.normal_side);
    }
  }
  const partList = [...names.parts.values()];
  const sortedIds = [...names.ids].sort();
  const remembered =
    opts.useCache && !opts.readClaims && solo === undefined && names.parts.size === 0 && names.targets.size === 0 && refunds.plans.length === 0
      ? cache.all(sortedIds)
      : undefined;
  used.cache = remembered !== undefined;
  if (remembered !== undefined) return rememberedRows(remembered, names.systemNormals);
  const read = await settled(
    lockStatements(conn, begin, list, { names, refunds, alone, partList, sortedIds, readClaims: opts.readClaims && solo === undefined }),
  );
  const missing = unaskedCreators(read[3], partList);
  const more = missing.length > 0 ? await receivables(conn, missing) : undefined;
  return rowsOf(read, names.systemNormals, more);
}

function namesOf(list: readonly Pending[]): Names {
  const parts = new Map<string, ParticipantKey>();
  const targets = new Map<string, ParticipantKey>();
  const ids = new Set<string>();
  for (const p of list) {
    const s = { orgId: p.req.org_id, livemode: p.req.livemode };
    for (const ref of p.refs) {
      if ("participant_id" in ref) parts.set(scopeKey(s.orgId, s.livemode, ref.participant_id), { ...s, participantId: ref.participant_id });
      else if ("wallet_id" in ref) ids.add(ref.wallet_id.toLowerCase());
    }
    for (const h of p.req.holds_create) {
      const t = h.release_transfer_to_participant_id;
      if (t !== undefined) targets.set(scopeKey(s.orgId, s.livemode, t), { ...s, participantId: t });
    }
  }
  return { parts, targets, ids, systemNormals: new Map<string, Side>() };
}

function refundNames(list: readonly Pending[], names: Names): RefundNames {
  const plans = list.flatMap((p) => (p.refund === undefined ? [] : [p.refund]));
  for (const plan of plans) {
    if (plan.creatorWalletId !== null) names.ids.add(plan.creatorWalletId);
    names.ids.add(plan.sourceId);
    for (const [id, side] of plan.systemNormals) names.systemNormals.set(id, side);
  }
  const saleKeys = [
    ...new Map(
      plans.map((pl) => [scopeKey(pl.orgId, pl.livemode, pl.saleReference), { orgId: pl.orgId, livemode: pl.livemode, saleReference: pl.saleReference }]),
    ).values(),
  ];
  const planHolds = [...new Set(plans.flatMap((pl) => (pl.holdId === null ? [] : [pl.holdId])))].sort();
  return { plans, saleKeys, planHolds };
}

function rememberedRows(locked: LockedWallet[], systemNormals: Map<string, Side>): Rows {
  return {
    participants: new Map(),
    locked,
    holds: new Map(),
    sales: new Map(),
    claims: [],
    owed: new Map(),
    existingParticipants: new Set(),
    systemNormals,
  };
}

function derivedAccountIds(derived: Derived | undefined): string[] {
  if (derived === undefined) return [];
  const ids = new Set<string>();
  for (const p of derived.postings) {
    ids.add(p.debit);
    ids.add(p.credit);
  }
  if (derived.cover !== undefined) {
    ids.add(derived.cover.walletId);
    ids.add(derived.cover.receivableId);
  }
  return [...ids];
}

/**
 * What a request that runs alone adds: the wallets of the holds it releases (a hold's wallet never changes, so a
 * plain read finds it before the wallets are locked), and the accounts its extension named by id.
 */
function soloNames(list: readonly Pending[], solo: SoloClaim): SoloNames {
  const alone = list[0];
  const scope = alone === undefined ? undefined : { orgId: alone.req.org_id, livemode: alone.req.livemode };
  const releaseIds = alone === undefined ? [] : alone.req.holds_release.map((h) => h.hold_id);
  const coverHold = solo.derived?.cover?.holdId;
  // The holds locked: those released, and the sale's hold a cover may use.
  const holdIds = [...new Set([...releaseIds, ...(coverHold === null || coverHold === undefined ? [] : [coverHold])])].sort();
  return { scope, holdIds, derivedIds: derivedAccountIds(solo.derived) };
}

/** The one round trip that reads and locks, in the lock order: its statements, sent together. */
function lockStatements(
  conn: ReservedSql,
  begin: () => Promise<unknown>,
  list: readonly Pending[],
  n: { names: Names; refunds: RefundNames; alone: SoloNames; partList: ParticipantKey[]; sortedIds: string[]; readClaims: boolean },
) {
  const { scope, holdIds } = n.alone;
  return [
    begin(),
    // Sales, then wallets, then holds: the one lock order.
    lockSalesAnyScope(conn, n.refunds.saleKeys),
    participantWallets(conn, [...n.partList, ...n.names.targets.values()]),
    lockWalletsAnyScope(conn, n.sortedIds, n.partList),
    // A request that runs alone holds its claim already.
    n.readClaims
      ? claimsByKey(
          conn,
          list.map((p) => ({ orgId: p.req.org_id, livemode: p.req.livemode, kind: p.req.kind, referenceId: p.req.reference_id })),
        )
      : Promise.resolve([] as ExistingClaim[]),
    receivables(conn, n.partList),
    scope === undefined ? Promise.resolve([] as HoldRow[]) : lockHolds(conn, scope, holdIds),
    // A refund's hold comes from its own sale row, so its id is trusted whatever the scope.
    lockHoldsAnyScope(
      conn,
      n.refunds.planHolds.filter((id) => !holdIds.includes(id)),
    ),
  ] as const;
}

/**
 * Creators with an outstanding receivable repay it from credits. Those named by participant are read with the
 * locks; creator wallets named by wallet id are read after their lock, if any: these.
 */
function unaskedCreators(locked: readonly LockedWallet[], partList: readonly ParticipantKey[]): ParticipantKey[] {
  const asked = new Set(partList.map((k) => scopeKey(k.orgId, k.livemode, k.participantId)));
  return locked
    .filter((w) => w.account_type === "creator_earnings" && w.participant_id !== null && !asked.has(scopeKey(w.org_id, w.livemode, w.participant_id)))
    .map((w) => ({ orgId: w.org_id, livemode: w.livemode, participantId: w.participant_id ?? "" }));
}

function rowsOf(read: Locked, systemNormals: Map<string, Side>, more: Locked[5] | undefined): Rows {
  const [, saleRows, participantRows, locked, claims, receivableRows, holdRows, planHoldRows] = read;
  const allReceivables = more === undefined ? receivableRows : [...receivableRows, ...more];
  return {
    participants: new Map(participantRows.map((r) => [scopeKey(r.org_id, r.livemode, r.participant_id), r.wallet_id])),
    locked,
    holds: new Map<string, LockedHold>([...holdRows, ...planHoldRows].map((h) => [h.id, h])),
    sales: new Map(saleRows.map((r) => [scopeKey(r.org_id, r.livemode, r.sale_reference), r])),
    claims,
    owed: new Map(
      allReceivables.filter((r) => r.outstanding > 0).map((r) => [scopeKey(r.org_id, r.livemode, r.entity_id), { id: r.id, outstanding: r.outstanding }]),
    ),
    existingParticipants: new Set(participantRows.map((r) => scopeKey(r.org_id, r.livemode, r.participant_id))),
    systemNormals,
  };
}

/**
 * Where `admin find` looks for each kind of id: the tables of each service that hold it, read with the admin
 * connection in one read-only snapshot. Secrets, sealed values and stored request hashes are left out of what
 * it prints. Lookups by a column other than a table's key are made with the org and environment of the row that
 * led to them, so they use the tables' indexes (every unique key starts with org_id, livemode).
 */
import type postgres from "postgres";
import { SALE_KIND } from "../../services/payments/src/usecases/complete-checkout.ts";
import { PAYOUT_KIND } from "../../services/payouts/src/usecases/request-payout.ts";
import { REFUND_KIND } from "../../services/refunds/src/usecases/execute-refund.ts";
import type { Kind, Node, Scope } from "./find-ids.ts";

export type Row = Record<string, unknown>;

/** A row found, and whether the ids it names are part of the path (false for lists and lookups of context). */
export interface Hit {
  table: string;
  row: Row;
  follow: boolean;
}

/** Newest rows of a participant's, org's or wallet's lists shown when that id itself is asked for. */
export const LIST_LIMIT = 20;

/** Columns never printed: secrets, sealed data, and request hashes (noise to an operator). */
const OMIT: Record<string, readonly string[]> = {
  "payments.checkout_sessions": ["request_hash", "create_response"],
  "payments.wallet_sessions": ["request_hash", "create_response"],
  "ledger.transactions": ["request_hash"],
  "ledger.participants": ["request_hash"],
  "payouts.payouts": ["request_hash", "dest_sealed"],
  "payouts.ach_files": ["sealed_content"],
  "payouts.bank_accounts": ["sealed"],
  "refunds.refunds": ["request_hash"],
  "refunds.refund_requests": ["request_hash"],
  "kyc.submissions": ["pii"],
  "gateway.api_keys": ["key_hash"],
  "webhooks.endpoints": ["secret", "previous_secret", "secret_sealed", "previous_secret_sealed"],
  "webhooks.deliveries": ["body"],
  "receipts.proofs": ["canonical_payload", "signature_jws"],
};

const INT8_OID = 20;

/** Rows as JSON-ready objects: int8 columns (postgres.js gives strings) become numbers when exact. */
export function plain(rows: postgres.RowList<Row[]>, omit: readonly string[] = []): Row[] {
  const int8 = rows.columns.filter((c) => c.type === INT8_OID).map((c) => c.name);
  return rows.map((r) => {
    const out: Row = { ...r };
    for (const k of omit) delete out[k];
    for (const k of int8) {
      const v = out[k];
      if (typeof v === "string" && Number.isSafeInteger(Number(v))) out[k] = Number(v);
    }
    return out;
  });
}

export class Reader {
  private readonly tables = new Map<string, boolean>();

  constructor(readonly q: postgres.TransactionSql) {}

  /** Schemas evolve per service; a table a deployment does not have yet is simply not looked in. */
  async exists(table: string): Promise<boolean> {
    let known = this.tables.get(table);
    if (known === undefined) {
      const [row] = await this.q<{ t: string | null }[]>`select to_regclass(${table})::text as t`;
      known = Boolean(row?.t);
      this.tables.set(table, known);
    }
    return known;
  }

  async select(table: string, where: postgres.PendingQuery<Row[]>, follow: boolean, tail?: postgres.PendingQuery<Row[]>): Promise<Hit[]> {
    if (!(await this.exists(table))) return [];
    const rows = await this.q<Row[]>`select * from ${this.q(table)} t where ${where} ${tail ?? this.q``}`;
    return plain(rows, OMIT[table]).map((row) => ({ table, row, follow }));
  }

  /** Rows whose `column` is one of `ids`, within each org and environment the rows that led here were in. */
  async scoped(table: string, column: string, items: readonly { scope: Scope; id: string }[], follow: boolean): Promise<Hit[]> {
    const groups = new Map<string, { scope: Scope; ids: string[] }>();
    for (const it of items) {
      const key = `${it.scope.orgId}|${String(it.scope.livemode)}`;
      const g = groups.get(key) ?? { scope: it.scope, ids: [] };
      g.ids.push(it.id);
      groups.set(key, g);
    }
    const out: Hit[] = [];
    for (const { scope, ids } of groups.values()) {
      const env = scope.livemode === undefined ? this.q`` : this.q`and livemode = ${scope.livemode}`;
      out.push(...(await this.select(table, this.q`org_id = ${scope.orgId} ${env} and ${this.q(column)} = any(${ids}::text[])`, follow)));
    }
    return out;
  }

  /** Ledger transactions by the deterministic references services post with (found even before the service recorded the id). */
  // Booleans travel as text: postgres.js would type an array of them as one boolean.
  async ledgerByReference(refs: readonly { org_id: string; livemode: boolean; kind: string; reference: string }[]): Promise<Hit[]> {
    if (refs.length === 0) return [];
    const rows = await this.q<Row[]>`
      select t.* from ledger.transactions t
      join unnest(${refs.map((r) => r.org_id)}::text[], ${refs.map((r) => String(r.livemode))}::bool[], ${refs.map((r) => r.kind)}::text[], ${refs.map((r) => r.reference)}::text[])
        as k(org_id, livemode, kind, reference_id) using (org_id, livemode, kind, reference_id)`;
    return plain(rows, OMIT["ledger.transactions"]).map((row) => ({ table: "ledger.transactions", row, follow: true }));
  }
}

const ids = (nodes: readonly Node[]): string[] => [...new Set(nodes.map((n) => n.id))];
const rowsOf = (hits: readonly Hit[], table: string): Row[] => hits.filter((h) => h.table === table).map((h) => h.row);
const str = (v: unknown): string => String(v);
const scopeOfRow = (r: Row): Scope => ({ orgId: str(r["org_id"]), livemode: r["livemode"] as boolean });

/** A wallet asked for: its participant, active holds and latest entries. */
async function walletLists(r: Reader, accounts: Row[]): Promise<Hit[]> {
  const wallets = accounts.filter((a) => a["is_wallet"] === true);
  if (wallets.length === 0) return [];
  const walletIds = wallets.map((w) => str(w["id"]));
  const out: Hit[] = [];
  const owners = wallets.filter((w) => typeof w["participant_id"] === "string").map((w) => ({ scope: scopeOfRow(w), id: str(w["participant_id"]) }));
  out.push(...(await r.scoped("ledger.participants", "participant_id", owners, false)));
  out.push(...(await r.select("ledger.holds", r.q`wallet_id = any(${walletIds}::uuid[]) and status = 'held'`, false)));
  for (const id of walletIds) {
    out.push(...(await entriesWhere(r, r.q`e.account_id = ${id}::uuid`, r.q`order by e.seq desc limit ${LIST_LIMIT}`)));
  }
  return out;
}

/** Entries with the account each moved (its type and owner), in posting order. */
async function entriesWhere(r: Reader, where: postgres.PendingQuery<Row[]>, tail: postgres.PendingQuery<Row[]>): Promise<Hit[]> {
  const rows = await r.q<Row[]>`
    select e.id, e.transaction_id, e.seq, e.entry_type, e.amount, e.balance_after, e.created_at,
           e.account_id, a.account_type, a.participant_id, a.owner_id
      from ledger.entries e join ledger.accounts a on a.id = e.account_id
     where ${where} ${tail}`;
  return plain(rows).map((row) => ({ table: "ledger.entries", row, follow: false }));
}

async function uuids(r: Reader, nodes: readonly Node[], seed: boolean): Promise<Hit[]> {
  const list = ids(nodes).map((id) => id.toLowerCase());
  const checkouts = await r.select("payments.checkout_sessions", r.q`id = any(${list}::uuid[])`, true);
  const accounts = await r.select("ledger.accounts", r.q`id = any(${list}::uuid[])`, false);
  const out = [...checkouts, ...accounts];
  const sessions = rowsOf(checkouts, "payments.checkout_sessions");
  // The sale's ledger transaction by its deterministic reference: present even while the session is `completing`.
  out.push(
    ...(await r.ledgerByReference(
      sessions.map((c) => ({
        org_id: str(c["org_id"]),
        livemode: c["livemode"] as boolean,
        kind: SALE_KIND,
        reference: str(c["ledger_reference"] ?? `checkout:${str(c["id"])}`),
      })),
    )),
  );
  if (sessions.length > 0)
    out.push(...(await r.select("payments.disputes", r.q`checkout_session_id = any(${sessions.map((c) => str(c["id"]))}::uuid[])`, true)));
  if (seed) out.push(...(await walletLists(r, rowsOf(accounts, "ledger.accounts"))));
  return out;
}

async function transactions(r: Reader, nodes: readonly Node[]): Promise<Hit[]> {
  const list = ids(nodes);
  const own = await r.select("ledger.transactions", r.q`id = any(${list}::text[])`, true);
  const reversals = await r.select("ledger.transactions", r.q`reversal_of = any(${list}::text[])`, true);
  const entries = await entriesWhere(r, r.q`e.transaction_id = any(${list}::text[])`, r.q`order by e.seq`);
  const sales = await r.select("ledger.sales", r.q`transaction_id = any(${list}::text[])`, true);
  const scoped = own.map((h) => ({ scope: scopeOfRow(h.row), id: str(h.row["id"]) }));
  return [
    ...own,
    ...reversals,
    ...entries,
    ...sales,
    ...(await r.scoped("receipts.receipts", "sale_transaction_id", scoped, true)),
    ...(await r.scoped("receipts.proofs", "transaction_id", scoped, false)),
    ...(await r.scoped("payments.shared_spends", "transaction_id", scoped, true)),
  ];
}

async function payouts(r: Reader, nodes: readonly Node[]): Promise<Hit[]> {
  const found = await r.select("payouts.payouts", r.q`id = any(${ids(nodes)}::text[])`, true);
  const files = found.map((h) => h.row["ach_file_id"]).filter((f): f is number => typeof f === "number");
  const out = [...found];
  if (files.length > 0) out.push(...(await r.select("payouts.ach_files", r.q`id = any(${files}::int8[])`, false)));
  // Each step's ledger transaction by its reference (payouts' transitions.ts names the settle and return kinds).
  const refs = found.flatMap((h) => {
    const base = { org_id: str(h.row["org_id"]), livemode: h.row["livemode"] as boolean };
    const ref = str(h.row["ledger_reference"]);
    return [
      { ...base, kind: PAYOUT_KIND, reference: ref },
      { ...base, kind: "payout_settlement", reference: `${ref}:settle` },
      { ...base, kind: "payout_return", reference: `${ref}:return` },
    ];
  });
  out.push(...(await r.ledgerByReference(refs)));
  return out;
}

async function refunds(r: Reader, nodes: readonly Node[]): Promise<Hit[]> {
  const found = await r.select("refunds.refunds", r.q`id = any(${ids(nodes)}::text[])`, true);
  const scoped = found.map((h) => ({ scope: scopeOfRow(h.row), id: str(h.row["id"]) }));
  const refs = found.map((h) => ({
    org_id: str(h.row["org_id"]),
    livemode: h.row["livemode"] as boolean,
    kind: REFUND_KIND,
    reference: str(h.row["ledger_reference"]),
  }));
  return [...found, ...(await r.scoped("payments.processor_refunds", "refund_id", scoped, true)), ...(await r.ledgerByReference(refs))];
}

/** A sale reference: the sale in the ledger, its refunds and the buyers' refund requests. */
async function sales(r: Reader, nodes: readonly Node[]): Promise<Hit[]> {
  const scoped = nodes.filter((n) => n.scope !== undefined).map((n) => ({ scope: n.scope as Scope, id: n.id }));
  return [
    ...(await r.scoped("ledger.sales", "sale_reference", scoped, true)),
    ...(await r.scoped("refunds.refunds", "sale_reference", scoped, true)),
    ...(await r.scoped("refunds.refund_requests", "sale_reference", scoped, true)),
  ];
}

/**
 * A participant id is the client's: the same one may exist in several orgs. Without an org it is looked up in
 * every org; asked for itself, its wallet, active holds, verification, bank account (masked) and latest payouts.
 */
async function participants(r: Reader, nodes: readonly Node[], seed: boolean): Promise<Hit[]> {
  const scoped = nodes.filter((n) => n.scope !== undefined);
  const unscoped = ids(nodes.filter((n) => n.scope === undefined));
  const found = [
    ...(await r.scoped(
      "ledger.participants",
      "participant_id",
      scoped.map((n) => ({ scope: n.scope as Scope, id: n.id })),
      false,
    )),
    ...(unscoped.length === 0 ? [] : await r.select("ledger.participants", r.q`participant_id = any(${unscoped}::text[])`, false)),
  ];
  if (!seed) return found;
  const out = [...found];
  const owners = found.map((h) => ({ scope: scopeOfRow(h.row), id: str(h.row["participant_id"]) }));
  const accounts = await r.select("ledger.accounts", r.q`id = any(${found.map((h) => str(h.row["wallet_id"]))}::uuid[])`, false);
  out.push(...accounts, ...(await walletLists(r, rowsOf(accounts, "ledger.accounts"))).filter((h) => h.table !== "ledger.participants"));
  out.push(...(await r.scoped("kyc.creator_verifications", "participant_id", owners, false)));
  out.push(...(await r.scoped("payouts.bank_accounts", "participant_id", owners, false)));
  for (const o of owners) {
    const env = o.scope.livemode === undefined ? r.q`` : r.q`and livemode = ${o.scope.livemode}`;
    out.push(
      ...(await r.select(
        "payouts.payouts",
        r.q`org_id = ${o.scope.orgId} ${env} and participant_id = ${o.id}`,
        false,
        r.q`order by created_at desc limit ${LIST_LIMIT}`,
      )),
    );
  }
  return out;
}

async function orgs(r: Reader, nodes: readonly Node[], seed: boolean): Promise<Hit[]> {
  const list = ids(nodes);
  const out = await r.select("gateway.orgs", r.q`id = any(${list}::text[])`, false);
  if (!seed) return out;
  out.push(...(await r.select("gateway.api_keys", r.q`org_id = any(${list}::text[])`, false, r.q`order by created_at desc limit ${LIST_LIMIT}`)));
  out.push(...(await r.select("kyc.business_verifications", r.q`org_id = any(${list}::text[])`, false)));
  return out;
}

/** Rows found by their own id in one table, whose ids are part of the path. */
function byId(table: string, column = "id"): (r: Reader, nodes: readonly Node[]) => Promise<Hit[]> {
  return (r, nodes) => r.select(table, r.q`${r.q(column)} = any(${ids(nodes)}::text[])`, true);
}

type Loader = (r: Reader, nodes: readonly Node[], seed: boolean) => Promise<Hit[]>;

/** The rows that hold a card processor's id: the checkout or top-up it paid, its refund, dispute or event. */
async function processorIds(r: Reader, nodes: readonly Node[]): Promise<Hit[]> {
  const list = ids(nodes);
  return [
    ...(await r.select(
      "payments.checkout_sessions",
      r.q`payment_id = any(${list}::text[]) or processor_payment_intent = any(${list}::text[]) or processor_charge = any(${list}::text[])`,
      true,
    )),
    ...(await r.select("payments.wallet_topups", r.q`processor_session_id = any(${list}::text[]) or processor_payment_intent = any(${list}::text[])`, true)),
    ...(await r.select("payments.processor_refunds", r.q`processor_refund_id = any(${list}::text[])`, true)),
    ...(await r.select("payments.disputes", r.q`processor_dispute_id = any(${list}::text[])`, true)),
    ...(await r.select("payments.processor_events", r.q`event_id = any(${list}::text[])`, true)),
  ];
}

/** Events are not here: they live in every service's outbox and are found by the walk itself (find.ts). */
export const LOADERS: Record<Exclude<Kind, "event">, Loader> = {
  uuid: uuids,
  transaction: transactions,
  hold: byId("ledger.holds"),
  release: byId("ledger.holds", "release_id"),
  payout: payouts,
  refund: refunds,
  refund_request: byId("refunds.refund_requests"),
  receipt: byId("receipts.receipts"),
  delivery: byId("webhooks.deliveries"),
  endpoint: async (r, nodes) => (await byId("webhooks.endpoints")(r, nodes)).map((h) => ({ ...h, follow: false })),
  request: async (r, nodes) => [
    ...(await byId("kyc.submissions", "request_id")(r, nodes)),
    ...(await byId("payments.shared_spend_reversals", "request_id")(r, nodes)),
  ],
  org: orgs,
  api_key: byId("gateway.api_keys"),
  kyc_submission: async (r, nodes) => [...(await byId("kyc.submissions")(r, nodes)), ...(await byId("kyc.review_actions", "submission_id")(r, nodes))],
  dispute: byId("payments.disputes"),
  wallet_session: byId("payments.wallet_sessions"),
  wallet_topup: byId("payments.wallet_topups"),
  sale: sales,
  participant: participants,
  processor: processorIds,
};

/**
 * Which ids `admin find` recognises, and how it finds ids inside the rows it reads: every id the platform hands
 * out has a recognisable form (a prefix and 24 base36 characters, a UUID, a request id), and the few a client
 * chooses (participant ids, sale references) are recognised by the column or key that holds them.
 */
import { ID_PREFIXES, REQUEST_ID_RE } from "@treasury/contracts";

export type Kind =
  | "uuid"
  | "ledger_reference"
  | "participant_lists"
  | "transaction"
  | "hold"
  | "release"
  | "payout"
  | "refund"
  | "refund_request"
  | "receipt"
  | "event"
  | "delivery"
  | "endpoint"
  | "request"
  | "org"
  | "api_key"
  | "kyc_submission"
  | "risk_evaluation"
  | "fraud_policy"
  | "invoice"
  | "invoice_payment"
  | "tax_document"
  | "dispute"
  | "wallet_session"
  | "wallet_topup"
  | "sale"
  | "participant"
  | "processor";

/** An org and, when known, its environment: what client-chosen ids are unique within. */
export interface Scope {
  orgId: string;
  livemode?: boolean | undefined;
}

export interface Node {
  kind: Kind;
  id: string;
  scope?: Scope | undefined;
}

const PREFIX_KINDS: Record<string, Kind> = {
  [ID_PREFIXES.transaction]: "transaction",
  [ID_PREFIXES.hold]: "hold",
  [ID_PREFIXES.release]: "release",
  [ID_PREFIXES.payout]: "payout",
  [ID_PREFIXES.refund]: "refund",
  [ID_PREFIXES.refundRequest]: "refund_request",
  [ID_PREFIXES.receipt]: "receipt",
  [ID_PREFIXES.event]: "event",
  [ID_PREFIXES.webhookDelivery]: "delivery",
  [ID_PREFIXES.webhookEndpoint]: "endpoint",
  [ID_PREFIXES.org]: "org",
  [ID_PREFIXES.key]: "api_key",
  [ID_PREFIXES.kycSubmission]: "kyc_submission",
  [ID_PREFIXES.fraudEvaluation]: "risk_evaluation",
  [ID_PREFIXES.fraudPolicy]: "fraud_policy",
  [ID_PREFIXES.invoice]: "invoice",
  [ID_PREFIXES.invoicePayment]: "invoice_payment",
  [ID_PREFIXES.taxDocument]: "tax_document",
  [ID_PREFIXES.dispute]: "dispute",
  [ID_PREFIXES.walletSession]: "wallet_session",
  [ID_PREFIXES.walletTopup]: "wallet_topup",
};

/**
 * Hubs lead to everything of a participant or an org: listed when asked for, never walked through. (Wallets are
 * UUIDs like checkout sessions; find-sources.ts never walks through an account row either.)
 */
export const HUB_KINDS: ReadonlySet<Kind> = new Set(["participant", "org"]);

const GENERATED_SOURCE = `(${Object.keys(PREFIX_KINDS).join("|")})_[0-9a-z]{24}`;
const UUID_SOURCE = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";
const GENERATED_ID = new RegExp(`\\b${GENERATED_SOURCE}\\b`, "g");
const GENERATED_ID_EXACT = new RegExp(`^${GENERATED_SOURCE}$`);
const UUID = new RegExp(`\\b${UUID_SOURCE}\\b`, "g");
const UUID_EXACT = new RegExp(`^${UUID_SOURCE}$`);
const REQUEST_ID = /\breq_[0-9a-f]{32}\b/g;
/** Keys whose value is a participant (a client's id, with no form of its own). */
const PARTICIPANT_KEYS = new Set(["participant_id", "creator_id", "release_transfer_to_participant_id"]);
/** Keys whose value is a sale reference (`checkout:<session id>`, or a client's reference for record-sale). */
const SALE_KEYS = new Set(["sale_reference", "original_sale_reference"]);

/**
 * The card processor's ids an operator copies from its dashboard or a buyer's statement: checkout sessions, payment
 * intents, charges, refunds, disputes and events (ours of the same prefixes are 24 lower-case characters and are
 * recognised first).
 */
const PROCESSOR_ID_EXACT = /^(cs_(test|live)|pi|ch|py|re|dp|du|evt)_[A-Za-z0-9]{8,}$/;

/** What kind of id `id` is, as typed by the operator; anything unrecognised may be a participant or a sale. */
export function classify(id: string): Kind[] {
  if (REQUEST_ID_RE.test(id)) return ["request"];
  const generated = GENERATED_ID_EXACT.exec(id);
  if (generated?.[1] !== undefined) return [PREFIX_KINDS[generated[1]] as Kind];
  if (UUID_EXACT.test(id.toLowerCase())) return ["uuid"];
  if (PROCESSOR_ID_EXACT.test(id)) return ["processor"];
  return ["participant", "sale"];
}

/** Every id in a string: a ledger reference such as `payout:po_…:settle` names the payout. */
function idsInString(s: string): Node[] {
  const out: Node[] = [];
  for (const m of s.matchAll(GENERATED_ID)) out.push({ kind: PREFIX_KINDS[m[1] as string] as Kind, id: m[0] });
  for (const m of s.matchAll(UUID)) out.push({ kind: "uuid", id: m[0] });
  for (const m of s.matchAll(REQUEST_ID)) out.push({ kind: "request", id: m[0] });
  return out;
}

function scopeOf(row: Record<string, unknown>): Scope | undefined {
  return typeof row["org_id"] === "string" ? { orgId: row["org_id"], livemode: typeof row["livemode"] === "boolean" ? row["livemode"] : undefined } : undefined;
}

function walk(value: unknown, key: string | undefined, scope: Scope | undefined, out: Node[], depth: number): void {
  if (depth > 16 || value === null || value === undefined) return;
  if (typeof value === "string") {
    if (key !== undefined && PARTICIPANT_KEYS.has(key)) out.push({ kind: "participant", id: value, scope });
    else if (key !== undefined && SALE_KEYS.has(key)) out.push({ kind: "sale", id: value, scope });
    out.push(...idsInString(value).map((n) => ({ ...n, scope })));
    return;
  }
  if (Array.isArray(value)) {
    for (const v of value) walk(v, key, scope, out, depth + 1);
    return;
  }
  if (typeof value === "object" && !(value instanceof Date)) {
    for (const [k, v] of Object.entries(value)) walk(v, k, scope, out, depth + 1);
  }
}

/** The ids a row names, each with the row's org and environment (client-chosen ids are unique only within them). */
export function idsInRow(row: Record<string, unknown>): Node[] {
  const out: Node[] = [];
  walk(row, undefined, scopeOf(row), out, 0);
  return out;
}

/** The trace id of a W3C traceparent (`00-<trace id>-<span id>-<flags>`). */
export function traceIdOf(traceparent: unknown): string | undefined {
  if (typeof traceparent !== "string") return undefined;
  const m = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/.exec(traceparent);
  return m?.[1];
}

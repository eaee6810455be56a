/**
 * Operator commands (`npm run admin -- <group> <command>`): one channel, NATS. Each command belongs to the service
 * that owns what it changes or reads; that service answers it on `svc.<owner>.admin.<group>.<command>` and writes
 * its audit row (the command and the row commit together where the change is a database write of its own). The
 * CLI is a thin client: it parses flags, sends them as they were typed, prints the answer. `audit list` and
 * `find` are asked of every service (each answers from its own schema) and merged by the CLI (ADR 0016).
 */
import { z } from "zod";
import { SERVICES, type ServiceName } from "./rpc.ts";

export interface AdminCommandSpec {
  /** The service that answers it. */
  service: ServiceName;
  /** One line of help: the flags it takes and what it answers. */
  usage: string;
  /** How many positional arguments it takes. */
  positionals?: number;
  /** Its one positional argument names a file the CLI reads and sends (at most ADMIN_FILE_MAX_BYTES, latin1). */
  file?: true;
  /** The answer says a check failed: the CLI exits 1 after printing it. */
  failed?: (body: Record<string, unknown>) => boolean;
}

/** A file travels in one NATS message. */
export const ADMIN_FILE_MAX_BYTES = 512 * 1024;

export const ADMIN_COMMANDS = {
  "org create": { service: "gateway", usage: "org create --name NAME [--reason TEXT]   → {org_id}" },
  "org suspend": { service: "gateway", usage: "org suspend --org ID [--reason TEXT]" },
  "org activate": { service: "gateway", usage: "org activate --org ID [--reason TEXT]" },
  "key create": {
    service: "gateway",
    usage: "key create --org ID --env test|live [--scopes read,payments] [--force-unverified] [--reason TEXT]   → {api_key, key_id}",
  },
  "key revoke": { service: "gateway", usage: "key revoke --key-id ID [--reason TEXT]" },
  "maintenance on": { service: "gateway", usage: "maintenance on [--retry-after SECONDS] [--message TEXT] [--reason TEXT]" },
  "maintenance off": { service: "gateway", usage: "maintenance off [--reason TEXT]" },
  "ledger verify": {
    service: "ledger",
    usage: "ledger verify [--org ID]   → {ok, violations}; exits 1 when any invariant is violated",
    failed: (b) => b["ok"] !== true,
  },
  "kyc list": {
    service: "kyc",
    usage:
      "kyc list --status pending|under_review|approved|rejected|suspended [--org ID] [--subject business|creator] [--limit N]   → {verifications} (no personal data)",
  },
  "kyc approve": { service: "kyc", usage: "kyc approve --id kycs_… [--reason TEXT] [--actor NAME]   → the decision" },
  "kyc reject": { service: "kyc", usage: "kyc reject --id kycs_… --reason TEXT [--actor NAME]   → the decision" },
  "kyc suspend": { service: "kyc", usage: "kyc suspend --id kycs_… --reason TEXT [--actor NAME]   → the decision" },
  "kyc show": {
    service: "kyc",
    usage: "kyc show --id kycs_… --reason TEXT [--actor NAME]   → the submission with its personal data, history and review trail (the view is recorded)",
  },
  "refunds set-policy": {
    service: "refunds",
    usage: "refunds set-policy --org ID --env test|live --shortfall receivable|refuse [--reason TEXT]   → {org_id, environment, shortfall_policy}",
  },
  "refunds get-policy": { service: "refunds", usage: "refunds get-policy --org ID --env test|live   → {org_id, environment, shortfall_policy}" },
  "receipts rotate-key": { service: "receipts", usage: "receipts rotate-key [--reason TEXT]   → {kid, alg, retired_kids, created_at}" },
  "receipts audit-chains": {
    service: "receipts",
    usage: "receipts audit-chains   → {chains, broken}; walks every receipt proof chain from its first link, records what it finds; exits 1 when one is broken",
    failed: (b) => Array.isArray(b["broken"]) && b["broken"].length > 0,
  },
  "payouts cut-file": {
    service: "payouts",
    usage: "payouts cut-file [--reason TEXT]   → {file, payout_ids}: waiting live payouts go into one NACHA file in the drop directory",
  },
  "payouts settle": {
    service: "payouts",
    usage:
      "payouts settle --date YYYY-MM-DD [--reason TEXT]   → {as_of, settled, pending}: processing payouts filed a settlement window before that date are paid",
  },
  "payouts ingest-returns": {
    service: "payouts",
    usage:
      "payouts ingest-returns FILE [--reason TEXT]   → {failed, already_failed, unmatched, notices, pending}: the bank's NACHA return file fails the payouts it returns",
    positionals: 1,
    file: true,
  },
  "payouts set-return-fee": {
    service: "payouts",
    usage:
      "payouts set-return-fee --org ORG --env test|live --cents N --reason TEXT   → {org_id, environment, return_fee_cents}: what each returned payout costs the creator from now on (0: nothing)",
  },
  "payouts get-return-fee": {
    service: "payouts",
    usage: "payouts get-return-fee --org ORG --env test|live   → {org_id, environment, return_fee_cents}",
  },
  "payouts run-schedules": {
    service: "payouts",
    usage:
      "payouts run-schedules [--at ISO-TIME] [--reason TEXT]   → {runs, paid, skipped}: every payout schedule due at that time (default now) pays once per period",
  },
  "risk list": {
    service: "risk",
    usage: "risk list [--org ID] [--env test|live] [--status pending|approved|denied] [--limit N]   → {evaluations}: the review queue, oldest first",
  },
  "risk approve": {
    service: "risk",
    usage: "risk approve --id feval_… --reason TEXT [--actor NAME]   → {evaluation}: the movement under review may go ahead (risk.decided)",
  },
  "risk deny": {
    service: "risk",
    usage: "risk deny --id feval_… --reason TEXT [--actor NAME]   → {evaluation}: the movement under review is refused (risk.decided)",
  },
  "risk set-fail-mode": {
    service: "risk",
    usage:
      "risk set-fail-mode --org ORG --env test|live --operation checkout|payout|refund|transfer|withdrawal --mode open|closed --reason TEXT   → {org_id, environment, fail_modes}: what that movement does when risk does not answer in time",
  },
  "risk get-fail-mode": {
    service: "risk",
    usage: "risk get-fail-mode --org ORG --env test|live   → {org_id, environment, fail_modes}",
  },
  "webhooks replay": {
    service: "webhooks",
    usage: "webhooks replay --delivery whd_… --reason TEXT   → {delivery}: sent again now, same webhook-id and body (one in flight is left as it is)",
  },
  "webhooks rotate-signing-key": {
    service: "webhooks",
    usage:
      "webhooks rotate-signing-key [--overlap-hours N] --reason TEXT   → {kid, previous, overlap_seconds}: a new Ed25519 key signs ed25519 endpoints' deliveries; the previous ones sign beside it and stay in the JWKS for N hours (default WEBHOOK_SIGNING_KEY_OVERLAP_MS; 0 drops them now)",
  },
  "operator create": {
    service: "console",
    usage:
      "operator create --email EMAIL --role viewer|reviewer|admin --password-stdin [--reason TEXT]   → {operator}: an account of the operator console; the password is read from stdin, never from the command line",
  },
} as const satisfies Record<string, AdminCommandSpec>;

export type AdminCommandName = keyof typeof ADMIN_COMMANDS;

/** The commands a service answers, by name. */
export type AdminCommandOf<S extends ServiceName> = {
  [K in AdminCommandName]: (typeof ADMIN_COMMANDS)[K]["service"] extends S ? K : never;
}[AdminCommandName];

/** `key revoke` → `admin.key.revoke`: the operation the owner registers. */
export function adminOperation(command: string): string {
  return `admin.${command.replace(/ /g, ".")}`;
}

/** `key revoke` → `key.revoke`: the audit row's action. */
export function adminAction(command: string): string {
  return command.replace(/ /g, ".");
}

/** Every service answers these: the CLI merges their answers (`audit list`, `find`). */
export const ADMIN_FANOUT_OPERATIONS = {
  auditList: "admin.audit.list",
  findRows: "admin.find.rows",
  findEvents: "admin.find.events",
  findDeliveries: "admin.find.deliveries",
} as const;

/** Operator commands reach every service: each answers the fan-out operations and its own commands. */
export const ADMIN_SERVICES: readonly ServiceName[] = SERVICES;

const ACTOR_LENGTH_MAX = 255;
const REASON_LENGTH_MAX = 1_000;

/** What the CLI sends: who acts, why, and the flags exactly as typed (the owner checks them). */
export const AdminRequest = z
  .object({
    actor: z.string().trim().min(1).max(ACTOR_LENGTH_MAX),
    reason: z.string().trim().max(REASON_LENGTH_MAX).optional(),
    flags: z.record(z.string().max(64), z.union([z.string().max(10_000), z.boolean()])),
    positionals: z.array(z.string().max(4_096)).max(4).default([]),
    file: z.object({ name: z.string().max(4_096), content: z.string().max(ADMIN_FILE_MAX_BYTES) }).optional(),
  })
  .strict();
export type AdminRequest = z.infer<typeof AdminRequest>;

export type AuditOutcome = "succeeded" | "failed" | "unknown";

/** One row of `audit list`: where it is kept (`<service>.audit_log`, or a service's own record of decisions). */
export interface AuditEntry {
  source: string;
  id: string;
  at: string | Date;
  actor: string;
  action: string;
  org_id: string | null;
  livemode: boolean | null;
  target_ids: string[];
  reason: string | null;
  outcome: AuditOutcome;
  error_code: string | null;
  error: string | null;
  details: Record<string, unknown>;
}

export const AUDIT_LIMIT_MAX = 1_000;

/** `admin.audit.list`: each service's rows matching the filter, newest first. */
export const AuditListRequest = z
  .object({
    org_id: z.string().max(255).optional(),
    /** `key.revoke`, or a whole group: `key`. */
    action: z
      .string()
      .regex(/^[a-z]+(\.[a-z][a-z-]*)?$/)
      .optional(),
    since: z.string().datetime({ offset: true }).optional(),
    /** Rows naming any of these ids. */
    targets: z.array(z.string().max(255)).max(2_000).optional(),
    limit: z.number().int().min(1).max(AUDIT_LIMIT_MAX),
  })
  .strict();
export type AuditListRequest = z.infer<typeof AuditListRequest>;

/** An org and, when known, its environment: what client-chosen ids are unique within. */
export const FindScope = z.object({ orgId: z.string().max(255), livemode: z.boolean().optional() }).strict();
export type FindScope = z.infer<typeof FindScope>;

/**
 * An id on the walk of `admin find`: its kind (from its form, or from the column that held it) and, when known,
 * the org and environment of the row that named it. Services answer lookups by a column other than a table's key
 * only for scoped nodes, so they use the tables' indexes (every unique key starts with org_id, livemode).
 */
export const FindNode = z.object({ kind: z.string().max(64), id: z.string().min(1).max(255), scope: FindScope.optional() }).strict();
export type FindNode = z.infer<typeof FindNode>;

/** A row found, and whether the ids it names are part of the path (false for lists and context). */
export interface FindHit {
  /** `<schema>.<table>`. */
  table: string;
  row: Record<string, unknown>;
  follow: boolean;
}

const FIND_NODES_MAX = 1_000;

/** `admin.find.rows`: the rows of the service that hold these ids; `seed` when they are the ids asked for. */
export const FindRowsRequest = z.object({ nodes: z.array(FindNode).max(FIND_NODES_MAX), seed: z.boolean() }).strict();
export type FindRowsRequest = z.infer<typeof FindRowsRequest>;
/** `nodes`: ids another service holds rows for that the rows found lead to (a ledger reference the service posted with). */
export interface FindRowsReply {
  hits: FindHit[];
  nodes: FindNode[];
}

/** `admin.find.events`: outbox events asked for by id, or naming an id or caused by a request; and who consumed events. */
export const FindEventsRequest = z
  .object({
    event_ids: z.array(z.string().max(255)).max(FIND_NODES_MAX),
    ids: z.array(z.string().max(255)).max(FIND_NODES_MAX),
    requests: z.array(z.string().max(255)).max(FIND_NODES_MAX),
    /** Events whose consumers (this service's inbox) are asked for. */
    consumed: z.array(z.string().max(255)).max(FIND_NODES_MAX),
  })
  .strict();
export type FindEventsRequest = z.infer<typeof FindEventsRequest>;

/** An outbox row as `admin find` shows it. */
export interface FoundEventRow {
  seq: number;
  id: string;
  org_id: string;
  livemode: boolean;
  type: string;
  payload: { data?: Record<string, unknown>; sequence?: number | string };
  headers: Record<string, string>;
  created_at: string;
  published_at: string | null;
  attempts: number;
}

export interface FindEventsReply {
  /** `by_id`: asked for by id; otherwise found because it names an id or a request caused it. */
  events: Array<{ row: FoundEventRow; by_id: boolean }>;
  /** Rows a service keeps of what others told it that name the ids (the card processor's events). */
  hits: FindHit[];
  consumed: Array<{ consumer: string; event_id: string; processed_at: string }>;
  /** An outbox held more matching events than one answer carries. */
  truncated: boolean;
}

/** `admin.find.deliveries` (the webhooks service): each event's deliveries with their endpoint. */
export const FindDeliveriesRequest = z.object({ event_ids: z.array(z.string().max(255)).max(FIND_NODES_MAX) }).strict();
export interface FindDeliveriesReply {
  deliveries: Record<string, unknown>[];
}

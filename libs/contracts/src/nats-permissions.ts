/**
 * Who may publish and subscribe to what on NATS: the one place that knows who may call what (ADR 0011).
 *
 * Every service connects as its own NATS user (its name) and may subscribe only to its own subjects
 * (`svc.<service>.>`) and its own inbox (`_INBOX_<service>.>`). Publishing is allowed for:
 * - the gateway: the public operations of the route table, the hosted pages and each service's health subject;
 * - a service calling another outside a live API request: the INTERNAL_CALLS below, on internal subjects
 *   (`svc.<owner>.internal.<operation>`) that the gateway never routes;
 * - the services that move money: `svc.ledger.post`;
 * - the operator CLI (`admin`) and the operator console (`console`): every service's `admin.*` operations
 *   (admin.ts); the console carries the signed-in operator as the actor (ADR 0021);
 * - every service's outbox relay: the subjects of the event types it owns (EVENT_OWNERS), the stream's info, and
 *   the consumers it owns; only the deploy-time `migrations` identity creates or updates the EVENTS stream;
 * - replies: a callee may publish only into its own branch of its callers' inboxes (`_INBOX_<caller>.<callee>.>`),
 *   so no callee can answer a request sent to another; the kit's RPC client waits for each reply on the branch of
 *   the service it called, under a random token (rpc-client.ts).
 *
 * Replies use inbox permissions rather than the server's `allow_responses`: the kit answers a batch of requests
 * with several messages to one reply subject, which needs `allow_responses` with more than one message, and then
 * nats-server 2.9 scans its table of open replies on every request once it holds 4,096 of them (100,000 requests
 * took 51.6 s instead of 0.4 s; ADR 0011).
 *
 * natsServerAuthorization() renders this as nats-server configuration: the test harness, the dev stack, the local
 * compose stack and the Helm values of k8s/nats all come from it.
 */
import { PAGE_ROUTES, ROUTES } from "./routes.ts";
import { BACKEND_SERVICES, healthSubject, rpcSubject, SERVICES } from "./rpc.ts";
import type { ServiceName } from "./rpc.ts";
import { EVENT_OWNERS, eventsStreamName, INTERNAL_EVENT_TYPES, PUBLIC_EVENT_TYPES, SANDBOX_TEST_EVENT_SOURCE } from "./events.ts";
import { ledgerPostSubject } from "./ledger-post.ts";
import { ADMIN_SERVICES } from "./admin.ts";

/** The operator CLI's identity: it calls the services' `admin.*` operations. */
export const NATS_ADMIN_USER = "admin";
/** The deploy-time identity of the migrate step: the only one that creates or updates the EVENTS stream. */
export const NATS_MIGRATIONS_USER = "migrations";
export type NatsIdentity = ServiceName | typeof NATS_ADMIN_USER | typeof NATS_MIGRATIONS_USER;
export const NATS_IDENTITIES: readonly NatsIdentity[] = [...SERVICES, NATS_ADMIN_USER, NATS_MIGRATIONS_USER];

/** The inbox prefix of an identity: only it may subscribe there, so no one else reads its replies. */
export function natsInboxPrefix(identity: string): string {
  return `_INBOX_${identity}`;
}

/** The branch of an inbox that only `callee` may publish into: where its replies to that inbox's owner go. */
export function natsInboxBranch(inboxPrefix: string, callee: string): string {
  return `${inboxPrefix}.${callee}`;
}

/** An operation another service calls: the owner answers it on `svc.<owner>.internal.<operation>`. */
export function internalOperation(operation: string): string {
  return operation.startsWith("internal.") ? operation : `internal.${operation}`;
}

export function internalSubject(prefix: string, service: string, operation: string): string {
  return rpcSubject(prefix, service, internalOperation(operation));
}

export interface InternalCall {
  caller: ServiceName;
  service: Exclude<ServiceName, "gateway">;
  /** Operation names as the owner registers them; the subject is internalSubject() of each. */
  operations: readonly string[];
}

/**
 * Calls between services that do not come through the gateway. Where the operation is also public, the owner
 * answers the internal subject with the same handler and the same body (service-kit's handle()).
 */
export const INTERNAL_CALLS: readonly InternalCall[] = [
  { caller: "kyc", service: "ledger", operations: ["getParticipant"] },
  { caller: "payments", service: "ledger", operations: ["getParticipant", "listWallets", "getWallet", "createWallet", "listWalletEntries", "depositToWallet"] },
  { caller: "payments", service: "refunds", operations: ["createRefundRequest", "processorRefundSettled"] },
  { caller: "refunds", service: "payments", operations: ["processorRefund"] },
  { caller: "refunds", service: "ledger", operations: ["reverseTransaction", "saleSummary"] },
  { caller: "payouts", service: "ledger", operations: ["getParticipant", "participantBalances", "getWallet", "listWalletEntries", "getSandboxClock"] },
  { caller: "payouts", service: "kyc", operations: ["getCreatorStatus", "getBusinessVerification"] },
  { caller: "receipts", service: "ledger", operations: ["transactionRecord"] },
  { caller: "receipts", service: "payments", operations: ["checkoutSale"] },
  // payout_ratio and refund_rate read a participant's recent sales and refunds, which the ledger owns.
  { caller: "risk", service: "ledger", operations: ["salesActivity"] },
  // Every movement of money is evaluated before it moves (schemas RiskEvaluateRequest).
  { caller: "payments", service: "risk", operations: ["evaluate"] },
  { caller: "payouts", service: "risk", operations: ["evaluate"] },
  { caller: "refunds", service: "risk", operations: ["evaluate"] },
  { caller: "ledger", service: "risk", operations: ["evaluate"] },
  // Aging reads the ledger's receivables and bills as of a date; a bank line naming an invoice pays it.
  { caller: "invoicing", service: "ledger", operations: ["receivableBalances", "openBills"] },
  { caller: "ledger", service: "invoicing", operations: ["matchBankLine"] },
  // 1099 figures come from the ledger as of the tax year's end; the tax service never posts.
  { caller: "tax", service: "ledger", operations: ["taxFigures", "taxSources"] },
  // Payout eligibility counts a W-9 certified with the tax service as the creator's tax certification.
  { caller: "payouts", service: "tax", operations: ["taxProfileStatus"] },
];

/** The services that move money: the only ones that may ask the ledger to post. */
export const LEDGER_POSTERS: readonly ServiceName[] = ["payments", "payouts", "refunds", "invoicing"];

/** Durable consumers on the EVENTS stream, by owning service. */
export const EVENT_CONSUMERS: Readonly<Partial<Record<ServiceName, readonly string[]>>> = {
  webhooks: ["webhooks-fanout"],
  // Each copy of the sandbox clocks a service keeps (service-kit clock.ts) follows the ledger's advances.
  // payouts-risk-decided: an operator's decision on a payout held for review (risk.decided).
  payouts: ["payouts-sandbox-clock", "payouts-risk-decided"],
  refunds: ["refunds-sandbox-clock"],
  risk: ["risk-sandbox-clock"],
  invoicing: ["invoicing-sandbox-clock"],
  tax: ["tax-sandbox-clock"],
};

/** The operations of `service` that other services call on internal subjects. */
export function internalOperationsOf(service: string): string[] {
  return [...new Set(INTERNAL_CALLS.filter((c) => c.service === service).flatMap((c) => c.operations))];
}

export interface NatsPermissions {
  publish: string[];
  subscribe: string[];
}

export interface PermissionOptions {
  /** Deployment subject prefix (NATS_PREFIX, e.g. "" in production). */
  prefix?: string;
  /**
   * Tests give every file its own prefix: each subject is then allowed without and with one leading token
   * (`svc.ledger.post` and `*.svc.ledger.post`), and JetStream API subjects name any stream.
   */
  anyPrefix?: boolean;
  /** Identities besides the matrix's callers that every service may answer (the test harness's superuser). */
  alsoAnswer?: readonly string[];
}

/** Who may call `service` (and so receive its replies). */
function callersOf(service: ServiceName): NatsIdentity[] {
  const callers = new Set<NatsIdentity>(service === "gateway" ? [] : ["gateway"]);
  for (const c of INTERNAL_CALLS) if (c.service === service) callers.add(c.caller);
  if (service === "ledger") for (const p of LEDGER_POSTERS) callers.add(p);
  if (ADMIN_SERVICES.includes(service)) for (const operator of OPERATOR_CLIENTS) callers.add(operator);
  return [...callers];
}

/** The identities that send operator commands: the CLI, and the console on behalf of a signed-in operator. */
const OPERATOR_CLIENTS: readonly NatsIdentity[] = [NATS_ADMIN_USER, "console"];

/** What an identity may call: subjects without the deployment prefix. */
function callsOf(identity: ServiceName | typeof NATS_ADMIN_USER): string[] {
  if (identity === NATS_ADMIN_USER || identity === "console") return ADMIN_SERVICES.map((s) => rpcSubject("", s, "admin.>"));
  const calls: string[] = [];
  if (identity === "gateway") {
    for (const r of ROUTES) if (r.service !== "gateway") calls.push(rpcSubject("", r.service, r.operation));
    for (const p of PAGE_ROUTES) calls.push(rpcSubject("", p.service, p.operation));
    for (const s of BACKEND_SERVICES) calls.push(healthSubject("", s));
  }
  for (const c of INTERNAL_CALLS) if (c.caller === identity) for (const op of c.operations) calls.push(internalSubject("", c.service, op));
  if (LEDGER_POSTERS.includes(identity)) calls.push(ledgerPostSubject(""));
  return calls;
}

/**
 * The event subjects a service's outbox relay may publish, without the deployment prefix: those of the domains it
 * owns (EVENT_OWNERS), and for the sandbox test event's source every public domain (events.ts says why).
 */
function eventSubjectsOf(identity: ServiceName): string[] {
  const domainOf = (type: string) => type.split(".", 1)[0] ?? "";
  const publicDomains = new Set(PUBLIC_EVENT_TYPES.map(domainOf));
  const internalDomains = new Set(INTERNAL_EVENT_TYPES.map(domainOf));
  const subjects: string[] = [];
  for (const [domain, owner] of Object.entries(EVENT_OWNERS)) {
    // A domain with no type listed yet is taken as public: internal types are the exception, named in events.ts.
    const isPublic = publicDomains.has(domain) || !internalDomains.has(domain);
    if (isPublic && (owner === identity || identity === SANDBOX_TEST_EVENT_SOURCE)) subjects.push(`evt.${domain}.>`);
    if (owner === identity && internalDomains.has(domain)) subjects.push(`evt.internal.${domain}.>`);
  }
  return subjects;
}

/**
 * The JetStream API subjects of an identity on the EVENTS stream named `stream`: every service reads the stream's
 * info (it waits for the stream at start) and uses the consumers it owns; only `migrations` creates and updates it.
 */
function jetStreamSubjects(identity: ServiceName | typeof NATS_MIGRATIONS_USER, stream: string): string[] {
  // jetstreamManager() asks for the account's JetStream info first.
  const subjects = ["$JS.API.INFO", `$JS.API.STREAM.INFO.${stream}`];
  if (identity === NATS_MIGRATIONS_USER) return [...subjects, `$JS.API.STREAM.CREATE.${stream}`, `$JS.API.STREAM.UPDATE.${stream}`];
  for (const durable of EVENT_CONSUMERS[identity] ?? []) {
    subjects.push(
      `$JS.API.CONSUMER.CREATE.${stream}.${durable}`,
      // The create subject carries the consumer's filter subject after its name.
      `$JS.API.CONSUMER.CREATE.${stream}.${durable}.>`,
      `$JS.API.CONSUMER.DURABLE.CREATE.${stream}.${durable}`,
      `$JS.API.CONSUMER.INFO.${stream}.${durable}`,
      `$JS.API.CONSUMER.MSG.NEXT.${stream}.${durable}`,
      `$JS.ACK.${stream}.${durable}.>`,
    );
  }
  return subjects;
}

/** An application subject under the deployment prefix, or with and without any one-token prefix. */
function prefixed(subjects: string[], opts: PermissionOptions): string[] {
  if (opts.anyPrefix) return subjects.flatMap((s) => [s, `*.${s}`]);
  return subjects.map((s) => `${opts.prefix ?? ""}${s}`);
}

/** The permissions of one identity. */
export function natsPermissions(identity: NatsIdentity, opts: PermissionOptions = {}): NatsPermissions {
  const inbox = `${natsInboxPrefix(identity)}.>`;
  if (identity === NATS_ADMIN_USER) return { publish: prefixed(callsOf(identity), opts), subscribe: [inbox] };
  const stream = opts.anyPrefix ? "*" : eventsStreamName(opts.prefix ?? "");
  if (identity === NATS_MIGRATIONS_USER) return { publish: jetStreamSubjects(identity, stream), subscribe: [inbox] };
  const replies = [
    ...callersOf(identity).map((c) => `${natsInboxBranch(natsInboxPrefix(c), identity)}.>`),
    // The test harness's superuser calls with the client library's own request() too, whose inbox has no branch.
    ...(opts.alsoAnswer ?? []).map((c) => `${natsInboxPrefix(c)}.>`),
  ];
  return {
    publish: [...prefixed([...callsOf(identity), ...eventSubjectsOf(identity)], opts), ...jetStreamSubjects(identity, stream), ...replies],
    subscribe: [...prefixed([`svc.${identity}.>`], opts), inbox],
  };
}

export interface NatsUser {
  user: string;
  /** The password as it goes into the configuration: a quoted literal, or a `$VARIABLE` nats-server resolves. */
  password: string;
  /** Absent: everything is allowed (the test harness's own superuser). */
  permissions?: NatsPermissions;
}

/** A nats-server configuration string literal (JSON quoting is a valid form of it). */
export function natsConfigString(value: string): string {
  return JSON.stringify(value);
}

/** The users of a deployment: every identity with its permissions, plus `extra` (e.g. a test superuser). */
export function natsUsers(password: (identity: NatsIdentity) => string, opts: PermissionOptions = {}, extra: NatsUser[] = []): NatsUser[] {
  return [...NATS_IDENTITIES.map((identity) => ({ user: identity, password: password(identity), permissions: natsPermissions(identity, opts) })), ...extra];
}

/** The `authorization { users = [...] }` block of a nats-server configuration file. */
export function natsServerAuthorization(users: readonly NatsUser[]): string {
  const list = (subjects: string[]) => `[${subjects.map(natsConfigString).join(", ")}]`;
  const lines = users.map((u) => {
    const perms =
      u.permissions === undefined
        ? ""
        : `, permissions: { publish: { allow: ${list(u.permissions.publish)} }, subscribe: { allow: ${list(u.permissions.subscribe)} } }`;
    return `    { user: ${natsConfigString(u.user)}, password: ${u.password}${perms} }`;
  });
  return `authorization {\n  users = [\n${lines.join("\n")}\n  ]\n}\n`;
}

/** The environment variable holding an identity's NATS password where the configuration refers to it. */
export function natsPasswordVariable(identity: NatsIdentity): string {
  return `NATS_PASSWORD_${identity.toUpperCase()}`;
}

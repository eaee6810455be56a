/**
 * Accounting records: income, expense, bill, pay-bill, adjustment, opening balance, internal transfer. Each is
 * one balanced transaction through the posting engine, idempotent on reference_id (derived from the request
 * when the body makes it optional), answering a flat `{transaction_id, …}`; a replay is 409
 * duplicate_reference_id with the existing record.
 */
import { randomBytes } from "node:crypto";
import { cents, DomainError, type PostOutcome, type PostRequestInput, type schemas, type Tenant } from "@treasury/contracts";
import type { z } from "zod";
import { isSystemAccountType, NORMAL_SIDE, type SystemAccountType } from "../domain/accounts.ts";
import { requestHash } from "../domain/canonical.ts";
import type { LedgerDeps } from "./deps.ts";
import type { PostHooks, PostPort } from "./ports.ts";
import type { BillRow } from "./rows.ts";

type Body<T extends z.ZodType> = z.output<T>;
type SystemRef = { system: SystemAccountType; entity_id?: string };
export type RecordDeps = Pick<LedgerDeps, "poster">;

export const RECORD_KINDS = {
  income: "income",
  expense: "expense",
  bill: "bill",
  billPayment: "bill_payment",
  adjustment: "adjustment",
  openingBalance: "opening_balance",
  transfer: "internal_transfer",
} as const;

function flat(outcome: PostOutcome): Record<string, unknown> {
  return {
    transaction_id: outcome.result.transaction_id,
    reference_id: outcome.result.reference_id,
    amount: outcome.result.amount,
    created_at: outcome.result.created_at,
    ...outcome.result.extra,
  };
}

async function record(poster: PostPort, tenant: Tenant, kind: string, request: Omit<PostRequestInput, "org_id" | "livemode" | "kind">, hooks?: PostHooks) {
  const outcome = await poster.post({ org_id: tenant.orgId, livemode: tenant.livemode, kind, ...request }, hooks);
  const resource = flat(outcome);
  if (outcome.duplicate) {
    throw new DomainError("duplicate_reference_id", `A ${kind} with reference_id ${outcome.result.reference_id} exists`, {
      extra: { existing_transaction_id: outcome.result.transaction_id, ...resource },
    });
  }
  return resource;
}

function describe(b: { description?: string | undefined; metadata?: Record<string, unknown> | undefined }, more: Record<string, unknown>) {
  const metadata = { ...(b.metadata ?? {}), ...Object.fromEntries(Object.entries(more).filter(([, v]) => v !== undefined)) };
  return { ...(b.description !== undefined ? { description: b.description } : {}), metadata };
}

/** The accounting date of a record (its `date`, `adjustment_date` or `as_of_date`), when the body gives one. */
function effectiveDate(date: string | undefined): { effective_date?: string } {
  return date === undefined ? {} : { effective_date: new Date(date).toISOString() };
}

/** A reference for operations whose reference_id is optional: the same request always derives the same one. */
function derivedReference(kind: string, body: unknown): string {
  return `${kind}:${requestHash(body).slice(0, 40)}`;
}

function systemRef(type: string, path: string, entityId?: string): SystemRef {
  if (!isSystemAccountType(type)) {
    throw new DomainError("validation_error", `Unknown account_type ${type}`, {
      details: [{ path, message: `must be a ledger account type (platform_cash, income, expense, …), not ${type}` }],
    });
  }
  return entityId === undefined ? { system: type } : { system: type, entity_id: entityId };
}

/** Errors: validation_error, duplicate_reference_id, idempotency_conflict. */
export async function recordIncome(deps: RecordDeps, tenant: Tenant, b: Body<typeof schemas.RecordIncomeBody>) {
  return record(deps.poster, tenant, RECORD_KINDS.income, {
    reference_id: b.reference_id,
    postings: [{ debit: { system: "platform_cash" }, credit: { system: "income" }, amount: b.amount }],
    ...describe(b, { category: b.category, date: b.date, customer_name: b.customer_name }),
    ...effectiveDate(b.date),
    result_extra: { type: "income", category: b.category ?? null },
  });
}

/** Errors: validation_error, duplicate_reference_id, idempotency_conflict. */
export async function recordExpense(deps: RecordDeps, tenant: Tenant, b: Body<typeof schemas.RecordExpenseBody>) {
  return record(deps.poster, tenant, RECORD_KINDS.expense, {
    reference_id: b.reference_id,
    postings: [{ debit: { system: "expense" }, credit: { system: "platform_cash" }, amount: b.amount }],
    ...describe(b, { category: b.category, date: b.date, vendor_name: b.vendor_name, paid_from: b.paid_from }),
    ...effectiveDate(b.date),
    result_extra: { type: "expense", category: b.category ?? null, vendor_name: b.vendor_name ?? null },
  });
}

function presentBill(bill: BillRow): Record<string, unknown> {
  return {
    bill_id: bill.id,
    vendor_name: bill.vendor_name,
    bill_amount: bill.amount,
    amount_paid: bill.paid_amount,
    amount_due: bill.amount - bill.paid_amount,
    status: bill.paid_amount === 0 ? "unpaid" : bill.paid_amount < bill.amount ? "partially_paid" : "paid",
    due_date: bill.due_date?.toISOString() ?? null,
  };
}

/** A bill: an expense owed (accounts_payable) until pay-bill settles it. Errors: validation_error, duplicate_reference_id, idempotency_conflict. */
export async function recordBill(deps: RecordDeps, tenant: Tenant, b: Body<typeof schemas.RecordBillBody>) {
  const billId = `bill_${randomBytes(12).toString("hex")}`;
  const res = await record(
    deps.poster,
    tenant,
    RECORD_KINDS.bill,
    {
      reference_id: b.reference_id,
      postings: [{ debit: { system: "expense" }, credit: { system: "accounts_payable" }, amount: b.amount }],
      ...describe(b, { category: b.category, date: b.date, vendor_name: b.vendor_name, due_date: b.due_date }),
      ...effectiveDate(b.date),
      result_extra: {
        type: "bill",
        bill_id: billId,
        vendor_name: b.vendor_name,
        due_date: b.due_date === undefined ? null : new Date(b.due_date).toISOString(),
      },
    },
    {
      // The bill id is fresh per attempt, so the idempotency hash is the client's body, not the request.
      hashInput: b,
      // The bill row commits with its transaction; the hook adds no postings.
      derive: async (tx, ctx) => {
        await tx.bills.insert(tenant, {
          id: billId,
          transactionId: ctx.transactionId,
          vendorName: b.vendor_name,
          amount: b.amount,
          dueDate: b.due_date === undefined ? null : new Date(b.due_date),
        });
        return { postings: [] };
      },
    },
  );
  return { ...res, status: "unpaid", amount_due: b.amount };
}

/**
 * Pays a bill (all that is due, or `amount`), under the bill row's lock.
 * Errors: validation_error, bill_not_found, bill_amount_exceeds_unpaid, duplicate_reference_id, idempotency_conflict.
 */
export async function payBill(deps: Pick<LedgerDeps, "bills" | "accounts" | "poster">, tenant: Tenant, b: Body<typeof schemas.PayBillBody>) {
  if (b.bill_id === undefined && b.bill_transaction_id === undefined) {
    throw new DomainError("validation_error", "bill_id or bill_transaction_id is required", {
      details: [{ path: "bill_id", message: "bill_id or bill_transaction_id is required" }],
    });
  }
  const bill = await deps.bills.find(tenant, { id: b.bill_id, transactionId: b.bill_transaction_id });
  if (bill === undefined) throw new DomainError("bill_not_found", "Bill not found", { hint: "POST /v1/record-bill answers the bill_id" });
  const payable = await deps.accounts.ensureSystem(tenant, "accounts_payable");
  const cash = await deps.accounts.ensureSystem(tenant, "platform_cash");
  const res = await record(
    deps.poster,
    tenant,
    RECORD_KINDS.billPayment,
    {
      reference_id: b.reference_id,
      ...describe(b, { bill_id: bill.id }),
    },
    {
      hashInput: { bill_id: bill.id, amount: b.amount ?? null },
      derive: async (tx) => {
        const locked = await tx.bills.lock(tenant, bill.id);
        if (locked === undefined) throw new Error(`bill ${bill.id} vanished`);
        const due = locked.amount - locked.paid_amount;
        const amount = b.amount ?? due;
        if (amount <= 0 || amount > due) {
          throw new DomainError("bill_amount_exceeds_unpaid", `Payment ${amount} exceeds the ${due} due on bill ${bill.id}`, {
            extra: { bill: presentBill(locked) },
          });
        }
        const after = await tx.bills.pay(tenant, bill.id, amount);
        return { postings: [{ debit: payable.id, credit: cash.id, amount: cents(amount) }], amount, extra: { type: "bill_payment", ...presentBill(after) } };
      },
    },
  );
  return res;
}

/** Greedy pairing of balanced debit and credit lines into postings. */
function linesToPostings(lines: readonly { ref: SystemRef; side: "debit" | "credit"; amount: number }[]): PostRequestInput["postings"] {
  const debits = lines.filter((l) => l.side === "debit").map((l) => ({ ...l }));
  const credits = lines.filter((l) => l.side === "credit").map((l) => ({ ...l }));
  const out: NonNullable<PostRequestInput["postings"]> = [];
  let i = 0;
  let j = 0;
  while (i < debits.length && j < credits.length) {
    const d = debits[i];
    const c = credits[j];
    if (d === undefined || c === undefined) break;
    const amount = Math.min(d.amount, c.amount);
    out.push({ debit: d.ref, credit: c.ref, amount });
    d.amount -= amount;
    c.amount -= amount;
    if (d.amount === 0) i++;
    if (c.amount === 0) j++;
  }
  return out;
}

/** Errors: validation_error (unknown account type, unbalanced entries), duplicate_reference_id, idempotency_conflict. */
export async function recordAdjustment(deps: RecordDeps, tenant: Tenant, b: Body<typeof schemas.RecordAdjustmentBody>) {
  const lines = b.entries.map((e, i) => ({ ref: systemRef(e.account_type, `entries.${i}.account_type`, e.entity_id), side: e.entry_type, amount: e.amount }));
  const debits = lines.filter((l) => l.side === "debit").reduce((s, l) => s + l.amount, 0);
  const credits = lines.filter((l) => l.side === "credit").reduce((s, l) => s + l.amount, 0);
  if (debits !== credits) {
    throw new DomainError("validation_error", `Adjustment entries do not balance: debits ${debits}, credits ${credits}`, {
      details: [{ path: "entries", message: "debits must equal credits" }],
    });
  }
  return record(deps.poster, tenant, RECORD_KINDS.adjustment, {
    reference_id: b.reference_id,
    postings: linesToPostings(lines),
    description: b.reason,
    metadata: {
      ...(b.metadata ?? {}),
      adjustment_type: b.adjustment_type,
      ...(b.adjustment_date !== undefined ? { adjustment_date: b.adjustment_date } : {}),
      ...(b.prepared_by !== undefined ? { prepared_by: b.prepared_by } : {}),
    },
    result_extra: { type: "adjustment", adjustment_type: b.adjustment_type, debits, credits },
    ...effectiveDate(b.adjustment_date),
  });
}

/** Each balance against opening_balance_equity. Errors: validation_error, duplicate_reference_id, idempotency_conflict. */
export async function recordOpeningBalance(deps: RecordDeps, tenant: Tenant, b: Body<typeof schemas.RecordOpeningBalanceBody>) {
  const postings: NonNullable<PostRequestInput["postings"]> = [];
  for (const [i, line] of b.balances.entries()) {
    const ref = systemRef(line.account_type, `balances.${i}.account_type`, line.entity_id);
    if (ref.system === "opening_balance_equity") {
      throw new DomainError("validation_error", "opening_balance_equity is the counter-account of opening balances", {
        details: [{ path: `balances.${i}.account_type`, message: "must not be opening_balance_equity" }],
      });
    }
    if (line.balance === 0) continue;
    // A positive balance sits on the account's normal side; the equity account takes the other side.
    const increase = line.balance > 0;
    const debitNormal = NORMAL_SIDE[ref.system] === "debit";
    const accountIsDebit = debitNormal === increase;
    const amount = Math.abs(line.balance);
    postings.push(
      accountIsDebit
        ? { debit: ref, credit: { system: "opening_balance_equity" }, amount }
        : { debit: { system: "opening_balance_equity" }, credit: ref, amount },
    );
  }
  if (postings.length === 0)
    throw new DomainError("validation_error", "Every balance is zero", { details: [{ path: "balances", message: "at least one balance must be non-zero" }] });
  return record(deps.poster, tenant, RECORD_KINDS.openingBalance, {
    reference_id: b.reference_id ?? derivedReference(RECORD_KINDS.openingBalance, b),
    postings,
    metadata: { ...(b.metadata ?? {}), as_of_date: b.as_of_date },
    result_extra: { type: "opening_balance", as_of_date: b.as_of_date, accounts: postings.length },
    ...effectiveDate(b.as_of_date),
  });
}

/** Moves money between two of the org's own accounts. Errors: validation_error, duplicate_reference_id, idempotency_conflict. */
export async function recordTransfer(deps: RecordDeps, tenant: Tenant, b: Body<typeof schemas.RecordTransferBody>) {
  const from = systemRef(b.from_account_type, "from_account_type");
  const to = systemRef(b.to_account_type, "to_account_type");
  if (from.system === to.system)
    throw new DomainError("validation_error", "from_account_type and to_account_type are the same", {
      details: [{ path: "to_account_type", message: "must differ from from_account_type" }],
    });
  return record(deps.poster, tenant, RECORD_KINDS.transfer, {
    reference_id: b.reference_id ?? derivedReference(RECORD_KINDS.transfer, b),
    postings: [{ debit: to, credit: from, amount: b.amount }],
    ...describe(b, { transfer_type: b.transfer_type }),
    result_extra: { type: "transfer", transfer_type: b.transfer_type, from_account_type: from.system, to_account_type: to.system },
  });
}

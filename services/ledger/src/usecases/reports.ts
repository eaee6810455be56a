/**
 * generate-report: trial balance, balance sheet and profit & loss, computed from the entries of the transactions
 * whose accounting time (effective_at, else created_at) is within the report's period, so a report as of a past
 * time shows the ledger as it stood then; and the transaction history of a period.
 */
import type { schemas, Tenant } from "@treasury/contracts";
import type { z } from "zod";
import type { LedgerDeps } from "./deps.ts";
import { transactionHistory } from "./reports-history.ts";
import type { AccountTotals } from "./rows.ts";

type Body = z.output<typeof schemas.GenerateReportBody>;
export type ReportDeps = Pick<LedgerDeps, "listing" | "now">;

const ASSETS = new Set(["platform_cash", "payouts_in_transit", "creator_receivable", "sandbox_funding", "accounts_receivable"]);
const LIABILITIES = new Set(["creator_earnings", "consumer_credit", "sales_tax_payable", "refunds_payable", "accounts_payable"]);
const EQUITY = new Set(["opening_balance_equity"]);
const REVENUE = new Set(["platform_revenue", "income"]);
const EXPENSES = new Set(["processing_fees", "expense"]);

/** A bare date (YYYY-MM-DD) as an upper bound includes that whole day. */
function upper(s: string | undefined): Date | undefined {
  if (s === undefined) return undefined;
  const d = new Date(s);
  return /^\d{4}-\d{2}-\d{2}$/.test(s) ? new Date(d.getTime() + 86_400_000 - 1) : d;
}

function row(a: AccountTotals) {
  const net = a.debits - a.credits;
  return {
    account_id: a.is_wallet ? null : a.account_id,
    account_type: a.account_type,
    entity_id: a.entity_id === "" ? null : a.entity_id,
    name: a.name,
    normal_side: a.normal_side,
    total_debits: a.debits,
    total_credits: a.credits,
    debit_balance: net > 0 ? net : 0,
    credit_balance: net < 0 ? -net : 0,
    balance: a.normal_side === "debit" ? net : -net,
  };
}

/** Errors: validation_error (from decoding). */
export async function generateReport(deps: ReportDeps, tenant: Tenant, body: Body) {
  const asOf = upper(body.as_of ?? body.end_date) ?? deps.now(tenant);
  if (body.report_type === "transaction_history") {
    const from = body.start_date === undefined ? undefined : new Date(body.start_date);
    return { report: await transactionHistory(deps, tenant, { from, to: asOf }, { page: body.page ?? 1, perPage: body.per_page }) };
  }
  if (body.report_type === "profit_loss") {
    const from = body.start_date === undefined ? undefined : new Date(body.start_date);
    const totals = (await deps.listing.accountTotals(tenant, { from, to: asOf })).map(row);
    const revenue = totals.filter((a) => REVENUE.has(a.account_type));
    const expenses = totals.filter((a) => EXPENSES.has(a.account_type));
    const sum = (xs: typeof totals) => xs.reduce((s, a) => s + a.balance, 0);
    return {
      report: {
        type: "profit_loss",
        start_date: from?.toISOString() ?? null,
        end_date: asOf.toISOString(),
        revenue: { accounts: revenue, total: sum(revenue) },
        expenses: { accounts: expenses, total: sum(expenses) },
        net_income: sum(revenue) - sum(expenses),
      },
    };
  }
  const accounts = (await deps.listing.accountTotals(tenant, { to: asOf })).map(row);
  if (body.report_type === "balance_sheet") {
    const pick = (set: Set<string>) => accounts.filter((a) => set.has(a.account_type));
    const sum = (xs: typeof accounts) => xs.reduce((s, a) => s + a.balance, 0);
    const retained = sum(pick(REVENUE)) - sum(pick(EXPENSES));
    const assets = sum(pick(ASSETS));
    const liabilities = sum(pick(LIABILITIES));
    const equity = sum(pick(EQUITY)) + retained;
    return {
      report: {
        type: "balance_sheet",
        as_of: asOf.toISOString(),
        assets: { accounts: pick(ASSETS), total: assets },
        liabilities: { accounts: pick(LIABILITIES), total: liabilities },
        equity: { accounts: pick(EQUITY), retained_earnings: retained, total: equity },
        totals: { assets, liabilities_and_equity: liabilities + equity, balanced: assets === liabilities + equity },
      },
    };
  }
  const debits = accounts.reduce((s, a) => s + a.debit_balance, 0);
  const credits = accounts.reduce((s, a) => s + a.credit_balance, 0);
  return { report: { type: "trial_balance", as_of: asOf.toISOString(), accounts, totals: { debits, credits, balanced: debits === credits } } };
}

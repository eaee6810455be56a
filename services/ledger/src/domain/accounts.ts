/** Account types of the ledger: per org+environment system accounts and per-owner wallets. */
import { SYSTEM_ACCOUNT_TYPES, type SystemAccountType } from "@treasury/contracts";
export { SYSTEM_ACCOUNT_TYPES, type SystemAccountType };

export const WALLET_TYPES = ["creator_earnings", "consumer_credit"] as const;
export type WalletType = (typeof WALLET_TYPES)[number];

export type AccountType = SystemAccountType | WalletType;
export type Side = "debit" | "credit";

/**
 * The side that increases each account's balance. Assets (cash, money in transit, receivables, the sandbox's
 * simulated card funding) and expenses are debit-normal; liabilities (wallets, payables), equity and revenue
 * are credit-normal. Processing fees are the platform's cost, so debit-normal.
 */
export const NORMAL_SIDE: Record<AccountType, Side> = {
  platform_cash: "debit",
  platform_revenue: "credit",
  processing_fees: "debit",
  sales_tax_payable: "credit",
  payouts_in_transit: "debit",
  refunds_payable: "credit",
  opening_balance_equity: "credit",
  income: "credit",
  expense: "debit",
  accounts_payable: "credit",
  creator_receivable: "debit",
  sandbox_funding: "debit",
  accounts_receivable: "debit",
  creator_earnings: "credit",
  consumer_credit: "credit",
};

export function isWalletType(t: string): t is WalletType {
  return (WALLET_TYPES as readonly string[]).includes(t);
}

export function isSystemAccountType(t: string): t is SystemAccountType {
  return (SYSTEM_ACCOUNT_TYPES as readonly string[]).includes(t);
}

/** How much an entry moves an account's balance, in the account's own (normal-side) terms. */
export function signedDelta(normal: Side, entryType: Side, amount: number): number {
  return normal === entryType ? amount : -amount;
}

/** Number of rows a system account's running balance is spread over (see docs/adr/0004-hot-accounts.md). */
export const BALANCE_SHARDS = 16;

/** Human-readable names of system accounts (shown in transaction listings). */
export const SYSTEM_ACCOUNT_NAMES: Record<SystemAccountType, string> = {
  platform_cash: "Platform cash",
  platform_revenue: "Platform revenue",
  processing_fees: "Processing fees",
  sales_tax_payable: "Sales tax payable",
  payouts_in_transit: "Payouts in transit",
  refunds_payable: "Refunds payable",
  opening_balance_equity: "Opening balance equity",
  income: "Income",
  expense: "Expense",
  accounts_payable: "Accounts payable",
  creator_receivable: "Creator receivable",
  sandbox_funding: "Sandbox funding (simulated cards)",
  accounts_receivable: "Accounts receivable",
};

/** Wallet capabilities by type (docs/api.md, Participants and wallets). */
export interface WalletFlags {
  redeemable: boolean;
  transferable: boolean;
  topup_supported: boolean;
  payout_supported: boolean;
}

export const CREATOR_EARNINGS_FLAGS: WalletFlags = { redeemable: true, transferable: true, topup_supported: false, payout_supported: true };

export function consumerCreditFlags(opts: { redeemable?: boolean | undefined; transferable?: boolean | undefined }): WalletFlags {
  return { redeemable: opts.redeemable ?? false, transferable: opts.transferable ?? false, topup_supported: true, payout_supported: false };
}

/**
 * Payout eligibility from the facts other services hold. Pure. Sandbox needs a test key and a positive available
 * balance; live needs all of: an approved creator verification, a certified tax profile, a bank account that is
 * not disabled (a return said it cannot take money: domain/nacha-returns.ts UNUSABLE_ACCOUNT_RETURNS), an
 * active creator wallet, an organisation whose payouts are enabled (its business verification approved), and
 * a positive available balance (docs/api.md, Payouts).
 */
export const ELIGIBILITY_ISSUES = [
  "kyc_not_approved",
  "tax_not_certified",
  "no_bank_account",
  "bank_account_disabled",
  "creator_access_inactive",
  "org_payouts_disabled",
  "insufficient_balance",
] as const;
export type EligibilityIssue = (typeof ELIGIBILITY_ISSUES)[number];

export interface EligibilityFacts {
  livemode: boolean;
  participantId: string;
  availableBalance: number;
  walletStatus: string;
  kycStatus: string;
  taxCertified: boolean;
  bankAccount: { last4: string; accountType: string; routingNumber: string; status: string; disabledReason: string | null } | undefined;
  businessStatus: string;
}

export interface Requirement {
  required: boolean;
  met: boolean;
}

export interface Eligibility {
  participant_id: string;
  eligible: boolean;
  available_balance_cents: number;
  issues: EligibilityIssue[];
  requirements: {
    environment: "sandbox" | "live";
    positive_balance: Requirement;
    kyc_approved: Requirement & { status: string };
    tax_certified: Requirement;
    bank_account: Requirement & { last4: string | null; account_type: string | null; status: string | null; disabled_reason: string | null };
    creator_access_active: Requirement & { status: string };
    org_payouts_enabled: Requirement & { business_verification_status: string };
  };
}

/**
 * `amount` is what a payout asks for: a balance below it is `insufficient_balance`. The eligibility read
 * passes 1 (a positive balance).
 */
export function assessEligibility(f: EligibilityFacts, amount = 1): Eligibility {
  const live = f.livemode;
  const checks: Array<[EligibilityIssue, Requirement]> = [
    ["kyc_not_approved", { required: live, met: f.kycStatus === "approved" }],
    ["tax_not_certified", { required: live, met: f.kycStatus === "approved" && f.taxCertified }],
    ["no_bank_account", { required: live, met: f.bankAccount !== undefined }],
    // Only an account that exists can be disabled: a missing one is no_bank_account alone.
    ["bank_account_disabled", { required: live, met: f.bankAccount === undefined || f.bankAccount.status === "active" }],
    ["creator_access_inactive", { required: live, met: f.walletStatus === "active" }],
    ["org_payouts_disabled", { required: live, met: f.businessStatus === "approved" }],
    ["insufficient_balance", { required: true, met: f.availableBalance >= Math.max(1, amount) }],
  ];
  const issues = checks.filter(([, r]) => r.required && !r.met).map(([issue]) => issue);
  const req = (issue: EligibilityIssue): Requirement => {
    const found = checks.find(([i]) => i === issue);
    if (found === undefined) throw new Error(`no check for ${issue}`);
    return found[1];
  };
  return {
    participant_id: f.participantId,
    eligible: issues.length === 0,
    available_balance_cents: f.availableBalance,
    issues,
    requirements: {
      environment: live ? "live" : "sandbox",
      positive_balance: req("insufficient_balance"),
      kyc_approved: { ...req("kyc_not_approved"), status: f.kycStatus },
      tax_certified: req("tax_not_certified"),
      bank_account: {
        required: live,
        met: req("no_bank_account").met && req("bank_account_disabled").met,
        last4: f.bankAccount?.last4 ?? null,
        account_type: f.bankAccount?.accountType ?? null,
        status: f.bankAccount?.status ?? null,
        disabled_reason: f.bankAccount?.disabledReason ?? null,
      },
      creator_access_active: { ...req("creator_access_inactive"), status: f.walletStatus },
      org_payouts_enabled: { ...req("org_payouts_disabled"), business_verification_status: f.businessStatus },
    },
  };
}

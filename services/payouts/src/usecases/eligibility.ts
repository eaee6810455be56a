/**
 * Payout eligibility: the facts from the ledger (balance, wallet status), kyc (creator verification, tax
 * certification, the business verification), the tax service (a certified W-9 is a tax certification too) and
 * this service (bank account), assessed by domain/eligibility.ts.
 *
 * Errors: participant_not_found, service_unavailable (a service did not answer: retry).
 */
import type { Tenant } from "@treasury/contracts";
import { assessEligibility, type Eligibility } from "../domain/eligibility.ts";
import type { PayoutsDeps } from "./deps.ts";

export async function checkEligibility(deps: PayoutsDeps, tenant: Tenant, participantId: string, amount = 1): Promise<Eligibility & { wallet_id: string }> {
  const participant = await deps.ledger.getParticipant(tenant, participantId);
  const [wallet, creator, businessStatus, bank] = await Promise.all([
    deps.ledger.getWallet(tenant, participant.wallet_id),
    deps.compliance.creator(tenant, participantId),
    deps.compliance.businessStatus(tenant),
    deps.bankAccounts.find(tenant, participantId),
  ]);
  // The W-9 is asked for only when the KYC submission did not certify (and only live requires it).
  const taxCertified = creator.tax_certified || (tenant.livemode && (await deps.compliance.taxProfileCertified(tenant, participantId)));
  const eligibility = assessEligibility(
    {
      livemode: tenant.livemode,
      participantId,
      // What a payout may take: the available balance less a fixed reserve (the ledger's payable figure).
      availableBalance: participant.payable_balance_cents ?? wallet.available_balance,
      walletStatus: wallet.status,
      kycStatus: creator.status,
      taxCertified,
      bankAccount:
        bank === undefined
          ? undefined
          : {
              last4: bank.last4,
              accountType: bank.account_type,
              routingNumber: bank.routing_number,
              status: bank.status,
              disabledReason: bank.disabled_reason,
            },
      businessStatus,
    },
    amount,
  );
  return { ...eligibility, wallet_id: wallet.id };
}

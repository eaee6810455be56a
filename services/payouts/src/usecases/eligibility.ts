/**
 * Payout eligibility: the facts from the ledger (balance, wallet status), kyc (creator verification, tax
 * certification, the business verification) and this service (bank account), assessed by domain/eligibility.ts.
 *
 * Errors: participant_not_found, service_unavailable (a service did not answer: retry).
 */
import { assessEligibility, type Eligibility } from "../domain/eligibility.ts";
import type { Scope } from "../adapters/ledger.ts";
import { findBankAccount } from "../store/bank-accounts.ts";
import type { PayoutsDeps } from "./deps.ts";

export async function checkEligibility(deps: PayoutsDeps, scope: Scope, participantId: string, amount = 1): Promise<Eligibility & { wallet_id: string }> {
  const participant = await deps.ledger.getParticipant(scope, participantId);
  const [wallet, creator, businessStatus, bank] = await Promise.all([
    deps.ledger.getWallet(scope, participant.wallet_id),
    deps.compliance.creator(scope, participantId),
    deps.compliance.businessStatus(scope),
    findBankAccount(deps.sql, scope, participantId),
  ]);
  const eligibility = assessEligibility(
    {
      livemode: scope.livemode,
      participantId,
      availableBalance: wallet.available_balance,
      walletStatus: wallet.status,
      kycStatus: creator.status,
      taxCertified: creator.tax_certified,
      bankAccount: bank === undefined ? undefined : { last4: bank.last4, accountType: bank.account_type, routingNumber: bank.routing_number },
      businessStatus,
    },
    amount,
  );
  return { ...eligibility, wallet_id: wallet.id };
}

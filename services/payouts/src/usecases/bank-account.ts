/**
 * A participant's payout bank account: set (replacing any earlier one) and read masked. The account number is
 * sealed at rest with the holder's name, bound to the participant; answers show only its last four digits. Every
 * set or change emits `bank_account.updated` (data: the account as answers show it) in the same transaction, so
 * a merchant learns at once when where a creator's money goes has changed.
 *
 * Errors: participant_not_found, bank_account_not_found, invalid_routing_number / validation_error (the body),
 * service_unavailable (no encryption keys configured, or the ledger did not answer).
 */
import { DomainError, newUuid, type schemas, type Tenant } from "@treasury/contracts";
import { outboxRowValues, type OutboxRowValues } from "@treasury/service-kit";
import type { z } from "zod";
import type { BankAccountRow } from "../domain/records.ts";
import { bankAccountAad, requireSealer, type PayoutsDeps, type SealedBankDetails } from "./deps.ts";

type BankAccountBody = z.output<typeof schemas.BankAccountBody>;

export function presentBankAccount(row: BankAccountRow, holder: string): Record<string, unknown> {
  return {
    object: "bank_account",
    participant_id: row.participant_id,
    account_holder_name: holder,
    routing_number: row.routing_number,
    account_type: row.account_type,
    last4: row.last4,
    status: row.status,
    disabled_reason: row.disabled_reason,
    livemode: row.livemode,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** The account as answers show it, and whether it is the participant's first (false: it replaced an earlier one). */
export interface SavedBankAccount {
  bankAccount: Record<string, unknown>;
  created: boolean;
}

export async function putBankAccount(deps: PayoutsDeps, tenant: Tenant, participantId: string, body: BankAccountBody): Promise<SavedBankAccount> {
  const sealer = requireSealer(deps);
  await deps.ledger.getParticipant(tenant, participantId);
  const details: SealedBankDetails = { account_holder_name: body.account_holder_name, account_number: body.account_number };
  const values = {
    routing_number: body.routing_number,
    account_type: body.account_type,
    last4: body.account_number.slice(-4),
    sealed: sealer.sealJson(details, bankAccountAad(tenant, participantId)),
    sealed_key_id: sealer.activeKeyId,
  };
  const id = `ba_${newUuid().replace(/-/g, "")}`;
  const { row, created } = await deps.bankAccounts.save(tenant, participantId, id, values, (saved) => ({
    type: "bank_account.updated",
    org_id: tenant.orgId,
    livemode: tenant.livemode,
    data: presentBankAccount(saved, body.account_holder_name),
  }));
  return { bankAccount: presentBankAccount(row, body.account_holder_name), created };
}

export async function getBankAccount(deps: PayoutsDeps, tenant: Tenant, participantId: string): Promise<Record<string, unknown>> {
  const row = await deps.bankAccounts.find(tenant, participantId);
  if (row === undefined) {
    throw new DomainError("bank_account_not_found", `Participant ${participantId} has no bank account`, {
      hint: `PUT /v1/participants/${participantId}/bank-account sets it`,
    });
  }
  const details = requireSealer(deps).openJson<SealedBankDetails>(row.sealed, bankAccountAad(tenant, participantId));
  return { bank_account: presentBankAccount(row, details.account_holder_name) };
}

/** The sealed details of a participant's account, for a live payout's destination; undefined when none is set. */
export async function bankDetailsOf(
  deps: Pick<PayoutsDeps, "bankAccounts" | "sealer">,
  tenant: Tenant,
  participantId: string,
): Promise<{ row: BankAccountRow; details: SealedBankDetails } | undefined> {
  const row = await deps.bankAccounts.find(tenant, participantId);
  if (row === undefined) return undefined;
  return { row, details: requireSealer(deps).openJson<SealedBankDetails>(row.sealed, bankAccountAad(tenant, participantId)) };
}

/**
 * `bank_account.updated` for an account a return disables (written with the payout's failure, in one statement):
 * the account as answers show it once disabled.
 */
export function disabledAccountEvent(
  deps: Pick<PayoutsDeps, "sealer">,
  tenant: Tenant,
  row: BankAccountRow,
  disabled: { reason: string; payoutId: string; at: Date },
): OutboxRowValues {
  const details = requireSealer(deps).openJson<SealedBankDetails>(row.sealed, bankAccountAad(tenant, row.participant_id));
  const after: BankAccountRow = {
    ...row,
    status: "disabled",
    disabled_reason: disabled.reason,
    disabled_at: disabled.at,
    disabled_by_payout_id: disabled.payoutId,
    updated_at: disabled.at,
  };
  return outboxRowValues({
    type: "bank_account.updated",
    org_id: tenant.orgId,
    livemode: tenant.livemode,
    data: presentBankAccount(after, details.account_holder_name),
  });
}

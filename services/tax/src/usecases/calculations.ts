/**
 * Settings per org, environment and year (the federal figures unless the org set its own), and a participant's
 * calculation: the ledger's figures as of the year's end, the form that applies and the profile's status.
 */
import { DomainError, type schemas, type Tenant } from "@treasury/contracts";
import { calculate, type Calculation, type Figures } from "../domain/documents.ts";
import { federalSettings, type TaxSettings } from "../domain/thresholds.ts";
import type { TaxDeps } from "./ports.ts";
import { checkYearBegun } from "./years.ts";

export async function settingsOf(deps: Pick<TaxDeps, "settings">, tenant: Tenant, taxYear: number): Promise<TaxSettings> {
  return (await deps.settings.get(tenant, taxYear)) ?? federalSettings(taxYear);
}

/** Errors: validation_error (a transaction threshold on a 1099-NEC). */
export async function putSettings(deps: Pick<TaxDeps, "settings">, tenant: Tenant, body: schemas.TaxSettingsBody): Promise<TaxSettings> {
  if (body.form === "1099-NEC" && body.threshold_transactions !== undefined) {
    throw new DomainError("validation_error", "A 1099-NEC has no transaction threshold", {
      details: [{ path: "threshold_transactions", message: "applies to 1099-K only" }],
    });
  }
  const federal = federalSettings(body.tax_year, body.form);
  const settings: TaxSettings = {
    taxYear: body.tax_year,
    form: body.form,
    thresholdCents: body.threshold_cents ?? federal.thresholdCents,
    thresholdTransactions: body.form === "1099-K" ? (body.threshold_transactions ?? federal.thresholdTransactions) : null,
    custom: true,
  };
  await deps.settings.put(tenant, settings);
  return settings;
}

export function figuresOf(f: schemas.TaxFigures): Figures {
  return {
    participantId: f.participant_id,
    grossCents: f.gross_cents,
    refundsCents: f.refunds_cents,
    transactionCount: f.transaction_count,
    monthlyCents: f.monthly_cents,
  };
}

/** Errors: invalid_tax_year, participant_not_found, service_unavailable (the ledger did not answer). */
export async function getCalculation(
  deps: Pick<TaxDeps, "settings" | "ledger" | "profiles" | "now">,
  tenant: Tenant,
  participantId: string,
  taxYear: number,
): Promise<Calculation> {
  checkYearBegun(deps, tenant, taxYear);
  const answer = await deps.ledger.figures(tenant, { tax_year: taxYear, participant_ids: [participantId] });
  const figures = answer.figures[0];
  if (figures === undefined)
    throw new DomainError("participant_not_found", `Participant ${participantId} not found`, { hint: "GET /v1/participants lists them" });
  const [settings, profile] = await Promise.all([settingsOf(deps, tenant, taxYear), deps.profiles.get(tenant, participantId)]);
  return calculate(taxYear, figuresOf(figures), settings, profile === undefined ? "missing" : "certified");
}

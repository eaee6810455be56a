/**
 * The W-9 tax profile: the one place a full TIN is accepted. It is checked against its type's rules, sealed with the
 * kit's key ring bound to the tenant and participant (a sealed value copied to another row does not open), and only
 * its last four digits are ever answered. The participant must exist in the ledger.
 */
import { DomainError, schemas, type Tenant } from "@treasury/contracts";
import { tinDigits, tinProblem } from "../domain/tin.ts";
import type { TaxDeps, TaxProfile } from "./ports.ts";

/** What binds a sealed TIN to its row. */
export function tinAad(tenant: Tenant, participantId: string): string {
  return `tax.profiles|${tenant.orgId}|${tenant.livemode}|${participantId}`;
}

/** Errors: invalid_tin, participant_not_found, service_unavailable (no key ring, or the ledger did not answer). */
export async function putProfile(
  deps: Pick<TaxDeps, "profiles" | "ledger" | "sealer" | "now">,
  tenant: Tenant,
  participantId: string,
  body: schemas.TaxProfileBody,
  keyId: string,
): Promise<{ profile: TaxProfile; created: boolean }> {
  const problem = tinProblem(body.tin_type, body.tin);
  if (problem !== undefined)
    throw new DomainError("invalid_tin", `Invalid ${body.tin_type.toUpperCase()}: ${problem}`, { details: [{ path: "tin", message: problem }] });
  if (deps.sealer === undefined) {
    throw new DomainError("service_unavailable", "Tax profiles need encryption keys, which are not configured", { hint: "Set PII_KEYS for the tax service" });
  }
  await requireParticipant(deps, tenant, participantId);
  const digits = tinDigits(body.tin);
  const now = deps.now(tenant);
  const profile: TaxProfile = {
    tenant,
    participantId,
    legalName: body.legal_name,
    businessName: body.business_name ?? null,
    tinType: body.tin_type,
    tinSealed: deps.sealer.seal(digits, tinAad(tenant, participantId)),
    tinLast4: digits.slice(5),
    businessType: body.business_type ?? null,
    address: body.address,
    certifiedAt: now,
    certifiedBy: body.certified_by ?? keyId,
    updatedAt: now,
  };
  const { created } = await deps.profiles.upsert(profile);
  return { profile, created };
}

/** Errors: tax_profile_not_found. */
export async function getProfile(deps: Pick<TaxDeps, "profiles">, tenant: Tenant, participantId: string): Promise<TaxProfile> {
  const profile = await deps.profiles.get(tenant, participantId);
  if (profile === undefined) {
    throw new DomainError("tax_profile_not_found", `Participant ${participantId} has no tax profile`, {
      hint: `PUT /v1/participants/${participantId}/tax-profile sets it`,
    });
  }
  return profile;
}

/** Errors: participant_not_found. */
export async function requireParticipant(deps: Pick<TaxDeps, "ledger">, tenant: Tenant, participantId: string): Promise<void> {
  // Only whether the ledger knows the id matters here: the earliest year keeps the figures' read empty.
  const answer = await deps.ledger.figures(tenant, { tax_year: schemas.TAX_YEAR_MIN, participant_ids: [participantId] });
  if (answer.unknown_participant_ids.includes(participantId)) {
    throw new DomainError("participant_not_found", `Participant ${participantId} not found`, { hint: "GET /v1/participants lists them" });
  }
}

export function presentProfile(p: TaxProfile) {
  return {
    participant_id: p.participantId,
    legal_name: p.legalName,
    business_name: p.businessName,
    tin_type: p.tinType,
    tin_last4: p.tinLast4,
    business_type: p.businessType,
    address: p.address,
    certified: true,
    certified_at: p.certifiedAt.toISOString(),
    certified_by: p.certifiedBy,
    updated_at: p.updatedAt.toISOString(),
  };
}

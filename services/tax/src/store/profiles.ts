/** SQL of W-9 profiles (usecases/profiles.ts) and of settings (usecases/calculations.ts). */
import type { schemas, Tenant } from "@treasury/contracts";
import type { Sql } from "@treasury/service-kit";
import type { TaxSettings } from "../domain/thresholds.ts";
import type { ProfileStore, SettingsStore, TaxProfile } from "../usecases/ports.ts";

interface ProfileRow {
  org_id: string;
  livemode: boolean;
  participant_id: string;
  legal_name: string;
  business_name: string | null;
  tin_type: schemas.TinType;
  tin_sealed: string;
  tin_last4: string;
  business_type: string | null;
  address: schemas.TaxAddress;
  certified_at: Date;
  certified_by: string;
  updated_at: Date;
}

function profileOf(r: ProfileRow): TaxProfile {
  return {
    tenant: { orgId: r.org_id, livemode: r.livemode },
    participantId: r.participant_id,
    legalName: r.legal_name,
    businessName: r.business_name,
    tinType: r.tin_type,
    tinSealed: r.tin_sealed,
    tinLast4: r.tin_last4,
    businessType: r.business_type,
    address: r.address,
    certifiedAt: r.certified_at,
    certifiedBy: r.certified_by,
    updatedAt: r.updated_at,
  };
}

export function pgProfileStore(sql: Sql): ProfileStore {
  return {
    async upsert(p) {
      const [row] = await sql<{ created: boolean }[]>`
        insert into tax.profiles (org_id, livemode, participant_id, legal_name, business_name, tin_type, tin_sealed, tin_last4,
          business_type, address, certified_at, certified_by, updated_at)
        values (${p.tenant.orgId}, ${p.tenant.livemode}, ${p.participantId}, ${p.legalName}, ${p.businessName}, ${p.tinType},
          ${p.tinSealed}, ${p.tinLast4}, ${p.businessType}, ${sql.json(p.address)}, ${p.certifiedAt}, ${p.certifiedBy}, ${p.updatedAt})
        on conflict (org_id, livemode, participant_id) do update set
          legal_name = excluded.legal_name, business_name = excluded.business_name, tin_type = excluded.tin_type,
          tin_sealed = excluded.tin_sealed, tin_last4 = excluded.tin_last4, business_type = excluded.business_type,
          address = excluded.address, certified_at = excluded.certified_at, certified_by = excluded.certified_by,
          updated_at = excluded.updated_at
        returning (xmax = 0) as created`;
      return { created: row?.created ?? false };
    },
    async get(t, participantId) {
      const [row] = await sql<ProfileRow[]>`
        select * from tax.profiles where org_id = ${t.orgId} and livemode = ${t.livemode} and participant_id = ${participantId}`;
      return row === undefined ? undefined : profileOf(row);
    },
    async many(t, ids) {
      if (ids.length === 0) return new Map();
      const rows = await sql<ProfileRow[]>`
        select * from tax.profiles where org_id = ${t.orgId} and livemode = ${t.livemode} and participant_id = any(${ids as string[]})`;
      return new Map(rows.map((r) => [r.participant_id, profileOf(r)]));
    },
  };
}

export function pgSettingsStore(sql: Sql): SettingsStore {
  return {
    async put(t: Tenant, s: TaxSettings) {
      await sql`
        insert into tax.settings (org_id, livemode, tax_year, form, threshold_cents, threshold_transactions)
        values (${t.orgId}, ${t.livemode}, ${s.taxYear}, ${s.form}, ${s.thresholdCents}, ${s.thresholdTransactions})
        on conflict (org_id, livemode, tax_year) do update set form = excluded.form, threshold_cents = excluded.threshold_cents,
          threshold_transactions = excluded.threshold_transactions, updated_at = now()`;
    },
    async get(t: Tenant, taxYear: number) {
      const [row] = await sql<{ form: schemas.TaxForm; threshold_cents: string; threshold_transactions: number | null }[]>`
        select form, threshold_cents::text, threshold_transactions from tax.settings
        where org_id = ${t.orgId} and livemode = ${t.livemode} and tax_year = ${taxYear}`;
      if (row === undefined) return undefined;
      return { taxYear, form: row.form, thresholdCents: Number(row.threshold_cents), thresholdTransactions: row.threshold_transactions, custom: true };
    },
  };
}

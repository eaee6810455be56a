-- Tax schema: W-9 profiles (the TIN sealed), settings per org, environment and year, and 1099 documents.
-- Applied by the kit's migrateAll with search_path = tax.

create table profiles (
  org_id text not null,
  livemode boolean not null,
  participant_id text not null,
  legal_name text not null,
  business_name text,
  tin_type text not null check (tin_type in ('ssn', 'ein', 'itin')),
  -- The full TIN, sealed with the kit's key ring (AES-256-GCM, bound to this row); never answered or logged.
  tin_sealed text not null,
  tin_last4 text not null check (tin_last4 ~ '^[0-9]{4}$'),
  business_type text,
  address jsonb not null,
  certified_at timestamptz not null,
  certified_by text not null,
  updated_at timestamptz not null default now(),
  primary key (org_id, livemode, participant_id)
);

create table settings (
  org_id text not null,
  livemode boolean not null,
  tax_year integer not null,
  form text not null check (form in ('1099-K', '1099-NEC')),
  threshold_cents bigint not null check (threshold_cents >= 0),
  threshold_transactions integer check (threshold_transactions >= 0),
  updated_at timestamptz not null default now(),
  primary key (org_id, livemode, tax_year)
);

create table documents (
  id text primary key,
  org_id text not null,
  livemode boolean not null,
  tax_year integer not null,
  participant_id text not null,
  form text not null check (form in ('1099-K', '1099-NEC')),
  -- draft: made by generation, updated by it; filed: marked filed, never changed again; corrected: a filed
  -- document whose figures a later document corrects (corrected_by names it).
  status text not null check (status in ('draft', 'filed', 'corrected')),
  gross_cents bigint not null check (gross_cents >= 0),
  refunds_cents bigint not null,
  transaction_count integer not null check (transaction_count >= 0),
  monthly_cents bigint[] not null check (cardinality(monthly_cents) = 12),
  recipient_tin_last4 text,
  -- The document this one corrects, and the one correcting this one.
  corrects text references documents (id),
  corrected_by text references documents (id),
  correction_reason text,
  filed_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
-- One current document (draft or filed) per participant and year: generating again updates it, never duplicates.
create unique index documents_current_uq on documents (org_id, livemode, tax_year, participant_id) where status <> 'corrected';
-- The export reads a year's current documents by form, then participant (FIRE groups payees by form).
create index documents_export_idx on documents (org_id, livemode, tax_year, form, participant_id) where status <> 'corrected';
create index documents_list_idx on documents (org_id, livemode, tax_year, participant_id, created_at, id);

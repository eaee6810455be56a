-- A year's export larger than one API answer, as a job: the streamed file written in numbered parts of at most
-- TAX_EXPORT_BYTES_MAX each, downloaded one by one and joined by the client (ADR 0022). Parts are sealed with the
-- TIN key ring: a FIRE file carries full TINs. Applied with search_path = tax.
create table exports (
  id text primary key,
  org_id text not null,
  livemode boolean not null,
  tax_year integer not null,
  format text not null check (format in ('csv', 'json', 'fire')),
  status text not null check (status in ('running', 'succeeded')),
  parts integer not null default 0,
  bytes bigint not null default 0,
  lease_until timestamptz,
  last_error text,
  created_at timestamptz not null default now(),
  finished_at timestamptz
);
create index exports_runnable_idx on exports (lease_until, created_at) where status = 'running';

create table export_parts (
  export_id text not null references exports (id) on delete cascade,
  part integer not null check (part >= 1),
  -- The part's text sealed (AES-256-GCM, bound to the export and the part's number).
  content_sealed text not null,
  bytes integer not null,
  primary key (export_id, part)
);

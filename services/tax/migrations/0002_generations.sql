-- A year's generation as a job: answered at once (200 when it ended within the wait, else 202), worked in the
-- background, and resumed after a crash from the page it had reached. Applied with search_path = tax.
create table generations (
  id text primary key,
  org_id text not null,
  livemode boolean not null,
  tax_year integer not null,
  status text not null check (status in ('running', 'succeeded')),
  -- The last participant of the ledger's last page written (its documents committed with this row): a resumed run
  -- reads on after it.
  after_participant text,
  participants_read integer not null default 0,
  created integer not null default 0,
  updated integer not null default 0,
  unchanged integer not null default 0,
  filed integer not null default 0,
  removed integer not null default 0,
  -- The runner holds the job until then, renewed with every page; a job whose lease ran out (its runner stopped) is
  -- taken by the next pass on any replica.
  lease_until timestamptz,
  last_error text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  finished_at timestamptz
);
-- One running generation per org, environment and year: generating while one runs answers that one.
create unique index generations_running_uq on generations (org_id, livemode, tax_year) where status = 'running';
create index generations_runnable_idx on generations (lease_until, created_at) where status = 'running';

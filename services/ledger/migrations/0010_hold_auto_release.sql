-- Holds that release themselves at hold_until (POST /v1/holds with auto_release, a reserve's holds): the ledger's
-- leader job releases them once the hold's clock (live: real time; sandbox: the org's test clock) passes it.
alter table holds add column auto_release boolean not null default false;
alter table holds add constraint holds_auto_release_needs_until check (not auto_release or hold_until is not null);

-- The job's scan: due auto-release holds still held, soonest first.
create index holds_auto_release_due on holds (hold_until) where status = 'held' and auto_release;

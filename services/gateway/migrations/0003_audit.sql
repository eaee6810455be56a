-- Operator actions (the admin CLI): who did what, to which ids, why, and how it ended. One row per action,
-- written in the same transaction as the change where the change is a database write, else right after the
-- outcome is known (actions another service performs over NATS). Rows are never updated or deleted, by any
-- role: the grants every migration run gives the service role cannot undo a trigger.
create table audit_log (
  id bigint generated always as identity primary key,
  at timestamptz not null default now(),
  -- The operator: `--actor`, else `operator:<login name>` of the machine the command ran on.
  actor text not null check (length(actor) between 1 and 255),
  -- `<command group>.<command>`, e.g. `key.revoke`, `payouts.cut-file`.
  action text not null check (action ~ '^[a-z]+\.[a-z][a-z-]*$'),
  -- The org acted on and its environment, when the action has one (maintenance and bank files have none).
  org_id text,
  livemode boolean,
  -- Every id the action touched (org, key, payout, submission…), so `admin find` of any of them shows it.
  target_ids text[] not null default '{}',
  reason text check (reason is null or length(reason) <= 1000),
  -- unknown: the service that performs it did not answer in time; it may have happened (see `admin find`).
  outcome text not null check (outcome in ('succeeded', 'failed', 'unknown')),
  error_code text,
  error text,
  -- What the command was given and answered, without secrets (an API key appears only as its id).
  details jsonb not null default '{}'
);
create index audit_log_at_idx on audit_log (at desc, id desc);
create index audit_log_org_idx on audit_log (org_id, at desc, id desc) where org_id is not null;
create index audit_log_action_idx on audit_log (action, at desc, id desc);
create index audit_log_targets_idx on audit_log using gin (target_ids);

create function audit_log_append_only() returns trigger language plpgsql as $$
begin
  raise exception 'gateway.audit_log is append-only (% refused)', tg_op using errcode = '42501';
end $$;
create trigger audit_log_no_update before update or delete on audit_log
  for each statement execute function audit_log_append_only();
create trigger audit_log_no_truncate before truncate on audit_log
  for each statement execute function audit_log_append_only();

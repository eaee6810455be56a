-- A live session at the card processor is asked about directly when its events are late (a webhook endpoint
-- misconfigured or down for longer than the processor retries): the next time to ask, while the row is pending
-- (usecases/check-processor-sessions.ts). Null for rows the processor has no session of.
alter table checkout_sessions add column processor_check_at timestamptz;
alter table wallet_topups add column processor_check_at timestamptz;
create index checkout_sessions_processor_check_idx on checkout_sessions (processor_check_at) where status = 'pending' and processor_check_at is not null;
create index wallet_topups_processor_check_idx on wallet_topups (processor_check_at) where status = 'pending' and processor_check_at is not null;
-- Sessions already waiting are asked about at the first pass.
update checkout_sessions set processor_check_at = now() where status = 'pending' and provider = 'stripe' and mode = 'session' and payment_id is not null;
update wallet_topups set processor_check_at = now() where status = 'pending' and processor_session_id is not null;

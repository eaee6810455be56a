-- Live card refunds: a refund of a sale the buyer paid by card through the processor stays `pending` after the
-- ledger took it back, until the processor settles it. processor_status records where it stands there (null: not
-- asked yet, or the sale was not paid through the processor); a refund the processor failed is reversed in the
-- ledger (reversal_transaction_id) before it is marked failed.
alter table refunds
  add column processor_status text check (processor_status in ('none', 'pending', 'succeeded', 'failed')),
  add column processor_refund_id text,
  add column processor_failure_reason text,
  add column reversal_transaction_id text;
-- The reconciler re-drives pending refunds except those waiting on the processor (its events settle them).
drop index refunds_pending_idx;
create index refunds_pending_idx on refunds (updated_at) where status = 'pending' and processor_status is distinct from 'pending';

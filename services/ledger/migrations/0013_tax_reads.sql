-- The tax service's reads (svc.ledger.internal.taxFigures and taxSources): a page of participants' sales, refunds
-- and reversals in a tax year, found by participant instead of by scanning the org's whole year. The refund and
-- reversal indexes are partial: only those transactions carry the keys, so other postings pay nothing for them.
create index sales_participant_idx on sales (org_id, livemode, participant_id);
create index transactions_refund_participant_idx on transactions (org_id, livemode, ((result -> 'extra' -> 'refund' ->> 'participant_id')))
  where kind = 'refund';
create index transactions_reversed_idx on transactions (org_id, livemode, ((result -> 'extra' ->> 'reversed_transaction_id')))
  where kind = 'reversal';

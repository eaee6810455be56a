-- A shared spend's reversal is the ledger's full refund of the spend's sale: the ledger computes what the creator
-- gives back and what is booked to creator_receivable (its answer is stored in `response`), so the plan columns go.
alter table shared_spend_reversals drop column creator_take, drop column receivable_amount;

-- Each sale's refunds by side: what the creator and the platform have given back so far. A refund's split is
-- the cumulative target minus these (domain/refund.ts), so partial refunds end exactly where a full one would.
alter table sales
  add column creator_refunded bigint not null default 0,
  add column platform_refunded bigint not null default 0;

-- Sales refunded or reversed before the columns existed: their creator part was taken back pro rata.
update sales set
  creator_refunded = (creator_amount * refunded_amount) / nullif(gross, 0),
  platform_refunded = refunded_amount - (creator_amount * refunded_amount) / nullif(gross, 0)
where refunded_amount > 0 and gross > 0;

alter table sales
  add constraint sales_creator_refunded_range check (creator_refunded >= 0 and creator_refunded <= creator_amount),
  add constraint sales_platform_refunded_range check (platform_refunded >= 0 and platform_refunded <= gross - creator_amount),
  add constraint sales_refunded_sides check (refunded_amount = creator_refunded + platform_refunded);

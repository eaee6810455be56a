-- Each counter's running figures: the count and sum of its counter_events after `since`, kept under the counter's
-- lock by every transaction that counts. Reading a window then subtracts only the movements that left it since
-- the last read (at in (since, new start]) instead of counting every movement still in it, so the read costs the
-- same at any volume. A counter without a row, or read after a long pause, is counted from its events once.
create table counter_totals (
  org_id text not null,
  livemode boolean not null,
  counter text not null,
  since timestamptz not null,
  n bigint not null check (n >= 0),
  amount bigint not null check (amount >= 0),
  primary key (org_id, livemode, counter)
);
-- The window reads sum amounts from the index alone.
create index counter_events_window_amount_idx on counter_events (org_id, livemode, counter, at) include (amount);
drop index counter_events_window_idx;

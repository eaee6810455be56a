-- Group commit, part 3 (ADR 0004). Forward-only; applied with search_path = ledger.

-- Wallet rows are rewritten by nearly every posting. Free space on their pages lets PostgreSQL keep each new
-- row version on the same page (a HOT update: no new index entries, the old version pruned in place).
-- Applies to pages written from now on.
alter table accounts set (fillfactor = 80);

-- Entries are found by account (entries_account_idx, in seq order), by transaction and by id; nothing looks
-- them up by seq alone. The id becomes the primary key and the index on seq goes: one index insertion less
-- per entry. seq stays (an identity column) and keeps ordering each account's entries.
alter table entries drop constraint entries_pkey, drop constraint entries_id_key, add constraint entries_pkey primary key (id);

-- Entries' references, checked once per statement instead of once per row. The foreign keys ran one SPI
-- query per entry and per key (and locked each new transaction row FOR KEY SHARE, a WAL record each): about
-- a seventh of the database's work per posting. The statement-level check below verifies the same thing for
-- all rows a statement inserted, with one primary-key probe per distinct id; the triggers after it keep the
-- other half of what the foreign keys guaranteed (a referenced transaction or account never disappears and
-- never changes its id).
alter table entries drop constraint entries_transaction_id_fkey;
alter table entries drop constraint entries_account_id_fkey;

-- enable_seqscan = off: the plan is made once per session, possibly while the tables are still small, and
-- then kept; a sequential scan planned then would read the whole table on every later insert.
create function entries_references_exist() returns trigger language plpgsql set enable_seqscan = off as $$
begin
  -- One index scan per table with the distinct ids as an array: a probe of the primary key per id.
  if (select count(*) from ledger.transactions where id = any (array(select distinct transaction_id from new_entries)))
       <> (select count(distinct transaction_id) from new_entries)
     or (select count(*) from ledger.accounts where id = any (array(select distinct account_id from new_entries)))
       <> (select count(distinct account_id) from new_entries) then
    raise exception 'ledger entries must name an existing transaction and account' using errcode = '23503';
  end if;
  return null;
end $$;
create trigger entries_references_exist after insert on entries referencing new table as new_entries
  for each statement execute function entries_references_exist();

-- Transactions and accounts are never deleted (a correction is a reversing transaction; an account is closed,
-- not removed), and their ids never change: entries may always rely on them.
create function ledger_rows_stay() returns trigger language plpgsql as $$
begin
  raise exception 'ledger % rows are never deleted and keep their id (% refused)', tg_table_name, tg_op using errcode = '42501';
end $$;
create trigger transactions_never_deleted before delete or truncate on transactions
  for each statement execute function ledger_rows_stay();
create trigger accounts_never_deleted before delete or truncate on accounts
  for each statement execute function ledger_rows_stay();
create trigger transactions_id_fixed before update of id on transactions
  for each row when (old.id is distinct from new.id) execute function ledger_rows_stay();
create trigger accounts_id_fixed before update of id on accounts
  for each row when (old.id is distinct from new.id) execute function ledger_rows_stay();

-- The batch write (store/batch.ts) checks its own row counts inside the statement, so a mismatch fails the
-- statement itself: its COMMIT is pipelined behind it and would otherwise commit before the client looked.
create function batch_write_check(ok boolean, expected text) returns boolean language plpgsql as $$
begin
  if ok is not true then
    raise exception 'posting batch wrote other row counts than planned (%)', expected using errcode = 'P0001';
  end if;
  return true;
end $$;

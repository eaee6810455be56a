-- The accounting date of a transaction when it is not the moment it was posted (backdated records, opening
-- balances). Null means created_at. Date filters of get-transactions and the reports use
-- coalesce(effective_at, created_at).
alter table transactions add column effective_at timestamptz;

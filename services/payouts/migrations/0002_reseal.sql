-- The reseal pass (src/usecases/reseal.ts) finds values sealed with a retired key by the key id each names: the
-- column beside it (bank accounts, ACH files) or, for a payout's destination, the id inside the sealed value
-- (`v1.<key id>.…`), so retiring a key needs no scan of every payout.
create index bank_accounts_sealed_key_idx on bank_accounts (sealed_key_id);
create index ach_files_sealed_key_idx on ach_files (sealed_key_id);
create index payouts_dest_key_idx on payouts (split_part(dest_sealed, '.', 2)) where dest_sealed is not null;

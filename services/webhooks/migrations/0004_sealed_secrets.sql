-- Signing secrets sealed at rest (the kit's key ring, WEBHOOK_SECRET_KEYS; AES-256-GCM bound to the endpoint's
-- id and the column): a read of the database or of a backup no longer yields a secret that signs. A migration
-- cannot seal (the keys live in configuration, not here), so the clear columns stay for now: the service's
-- reseal pass (on start and then periodically) seals every row that still has a clear secret and sets the clear
-- columns to null, and moves rows sealed with a retired key to the active one. A later migration drops them.
alter table endpoints alter column secret drop not null;
alter table endpoints add column secret_sealed text;
-- The previous secret (while its rotation overlap lasts), sealed with the same key as the current one.
alter table endpoints add column previous_secret_sealed text;
-- The key both sealed values were sealed with; null while the row still has a clear secret.
alter table endpoints add column secret_key_id text;
alter table endpoints add constraint endpoints_has_secret check (secret is not null or secret_sealed is not null);
-- What the reseal pass looks for: clear rows, and rows by key id.
create index endpoints_clear_secret_idx on endpoints (id) where secret is not null or previous_secret is not null;
create index endpoints_secret_key_idx on endpoints (secret_key_id);

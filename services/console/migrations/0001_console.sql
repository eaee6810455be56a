-- Console schema: the operators who sign in to the operator console, their sessions and every sign-in attempt
-- (docs/adr/0021-operator-console.md). Applied by the kit's migrateAll with search_path = console.

create table operators (
  id text primary key,
  -- Stored lower-cased: one account per address however it is typed.
  email text not null unique check (email = lower(email) and length(email) between 3 and 320),
  role text not null check (role in ('viewer', 'reviewer', 'admin')),
  -- scrypt$<log2 N>$<r>$<p>$<salt>$<key>, base64url (domain/passwords.ts); never the password.
  password_hash text not null,
  created_at timestamptz not null default now(),
  disabled_at timestamptz
);

create table sessions (
  -- SHA-256 of the cookie's random id: a copy of this table does not sign anyone in.
  id_hash text primary key,
  operator_id text not null references operators (id),
  -- The synchronizer token every form of this session carries (checked on each POST).
  csrf_token text not null,
  created_at timestamptz not null default now(),
  last_seen_at timestamptz not null default now(),
  -- The absolute end, whatever the activity; the idle end is last_seen_at plus the idle timeout.
  expires_at timestamptz not null
);
create index sessions_operator_idx on sessions (operator_id);
create index sessions_expires_idx on sessions (expires_at);

-- Every sign-in attempt, failed or not, by the address typed (known or not, so a lockout says nothing of
-- which addresses exist).
create table login_attempts (
  id bigserial primary key,
  email text not null,
  succeeded boolean not null,
  client_ip text,
  at timestamptz not null default now()
);
create index login_attempts_email_idx on login_attempts (email, at desc);

#!/usr/bin/env bash
# Writes .env for the local compose stack (docker-compose.yml reads it): each service role's PostgreSQL password,
# each NATS identity's password (ADR 0011) and the key rings that seal secrets at rest, all fresh and random. An
# existing .env is kept (its passwords are already in the stack's volumes); a NATS identity added since gets its
# password appended.
#   deploy/compose-env.sh && docker compose up --build
set -euo pipefail

file="$(cd "$(dirname "$0")/.." && pwd)/.env"
nats_identities="gateway ledger payments payouts refunds receipts kyc webhooks risk invoicing tax console admin migrations"
umask 077
password() { head -c 30 /dev/urandom | base64 | tr -dc 'A-Za-z0-9'; }
services="gateway ledger payments payouts refunds receipts kyc webhooks risk invoicing tax console"
if [ -e "$file" ]; then
  # A service or NATS identity added since the file was written gets its password appended.
  for service in $services; do
    variable="DB_PASSWORD_$(printf '%s' "$service" | tr '[:lower:]' '[:upper:]')"
    if ! grep -q "^$variable=" "$file"; then
      printf '%s=%s\n' "$variable" "$(password)" >>"$file"
      echo "added   $variable to $file"
    fi
  done
  for identity in $nats_identities; do
    variable="NATS_PASSWORD_$(printf '%s' "$identity" | tr '[:lower:]' '[:upper:]')"
    if ! grep -q "^$variable=" "$file"; then
      printf '%s=%s\n' "$variable" "$(password)" >>"$file"
      echo "added   $variable to $file"
    fi
  done
  # The tax service's key ring (TINs), for a file written before the service existed.
  if ! grep -q "^TAX_PII_KEYS=" "$file"; then
    printf 'TAX_PII_KEYS=tin1:%s\n' "$(head -c 32 /dev/urandom | base64 | tr -d '\n')" >>"$file"
    echo "added   TAX_PII_KEYS to $file"
  fi
  echo "kept    $file"
  exit 0
fi
key_ring() { printf '%s:%s' "$1" "$(head -c 32 /dev/urandom | base64 | tr -d '\n')"; }
{
  for service in $services; do
    upper="$(printf '%s' "$service" | tr '[:lower:]' '[:upper:]')"
    printf 'DB_PASSWORD_%s=%s\n' "$upper" "$(password)"
  done
  for identity in $nats_identities; do
    upper="$(printf '%s' "$identity" | tr '[:lower:]' '[:upper:]')"
    printf 'NATS_PASSWORD_%s=%s\n' "$upper" "$(password)"
  done
  printf 'PII_KEYS=%s\n' "$(key_ring pii1)"
  printf 'PAYOUTS_PII_KEYS=%s\n' "$(key_ring bank1)"
  printf 'RECEIPTS_SEALING_KEYS=%s\n' "$(key_ring seal1)"
  printf 'WEBHOOK_SECRET_KEYS=%s\n' "$(key_ring whk1)"
  printf 'TAX_PII_KEYS=%s\n' "$(key_ring tin1)"
} >"$file"
echo "created $file"

#!/usr/bin/env bash
# Writes the files an overlay's secretGenerator reads (k8s/overlays/<env>/secrets/*.env) with fresh random
# values. Existing files are kept: a password PostgreSQL or a sealed row already uses is never replaced by
# accident (rotate by editing a file on purpose). The folder's .gitignore keeps them out of the repository.
#   k8s/make-secrets.sh k8s/overlays/dev
#   BACKUP_ACCESS_KEY_ID=… BACKUP_ACCESS_SECRET_KEY=… k8s/make-secrets.sh k8s/overlays/prod
# Passwords are letters and digits only: they are written into connection URLs unescaped.
set -euo pipefail

overlay="${1:?usage: k8s/make-secrets.sh OVERLAY_DIR}"
dir="$overlay/secrets"
mkdir -p "$dir"
umask 077

password() { LC_ALL=C tr -dc 'A-Za-z0-9' </dev/urandom | head -c 40; }
# A key ring entry of the kit's sealed values: `kid:base64 of 32 random bytes`.
key_ring() { printf '%s:%s' "$1" "$(head -c 32 /dev/urandom | base64 | tr -d '\n')"; }

write() {
  local file="$dir/$1"
  shift
  if [ -e "$file" ]; then
    echo "kept    $file"
    return
  fi
  printf '%s\n' "$@" >"$file"
  echo "created $file"
}

for service in gateway ledger payments payouts refunds receipts kyc webhooks; do
  write "pg-role-$service.env" "username=${service}_svc" "password=$(password)"
done
write redis.env "password=$(password)"
write kyc-pii.env "keys=$(key_ring "pii$(date +%Y%m)")"
write payouts-pii.env "keys=$(key_ring "bank$(date +%Y%m)")"
write receipts-sealing.env "keys=$(key_ring "seal$(date +%Y%m)")"
# Empty unless a Stripe account is connected: the payments service then answers provider_not_configured for it.
write stripe.env "secret-key=${STRIPE_SECRET_KEY:-}"
if grep -q 'treasury-pg-backup' "$overlay/kustomization.yaml"; then
  write pg-backup.env "ACCESS_KEY_ID=${BACKUP_ACCESS_KEY_ID:?set BACKUP_ACCESS_KEY_ID (object store for PostgreSQL backups)}" \
    "ACCESS_SECRET_KEY=${BACKUP_ACCESS_SECRET_KEY:?set BACKUP_ACCESS_SECRET_KEY}"
fi

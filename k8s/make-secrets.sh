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

# A private CA and the NATS servers' certificate signed by it: clients reach the servers as `nats` (the Service) and,
# in a cluster, by the pods' names under the headless Service. The CA's key stays here, for renewing the certificate.
nats_tls() {
  if [ -e "$dir/nats-tls.crt" ]; then
    echo "kept    $dir/nats-tls.crt"
    return
  fi
  local ns="${NAMESPACE:-treasury}" csr
  csr="$(mktemp)"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 -subj "/CN=treasury-nats-ca" \
    -keyout "$dir/nats-ca.key" -out "$dir/nats-ca.crt" 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=nats" -keyout "$dir/nats-tls.key" -out "$csr" 2>/dev/null
  openssl x509 -req -in "$csr" -CA "$dir/nats-ca.crt" -CAkey "$dir/nats-ca.key" -CAcreateserial -days 825 -out "$dir/nats-tls.crt" \
    -extfile <(printf 'subjectAltName=DNS:nats,DNS:nats.%s,DNS:nats.%s.svc,DNS:nats.%s.svc.cluster.local,DNS:*.nats-headless,DNS:*.nats-headless.%s,DNS:*.nats-headless.%s.svc,DNS:*.nats-headless.%s.svc.cluster.local\nextendedKeyUsage=serverAuth\n' "$ns" "$ns" "$ns" "$ns" "$ns" "$ns") 2>/dev/null
  rm -f "$csr" "$dir/nats-ca.srl"
  echo "created $dir/nats-ca.crt $dir/nats-tls.crt $dir/nats-tls.key"
}

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

for service in gateway ledger payments payouts refunds receipts kyc webhooks risk invoicing tax console; do
  write "pg-role-$service.env" "username=${service}_svc" "password=$(password)"
done
write redis.env "password=$(password)"
# Each NATS identity's password (ADR 0011): the services read theirs, the migrate step `migrations`', the NATS servers
# all of them (k8s/nats/values-auth.yaml). An identity added since the file was written gets its password appended.
nats_identities="gateway ledger payments payouts refunds receipts kyc webhooks risk invoicing tax console admin migrations"
nats_passwords() {
  for identity in $nats_identities; do
    printf 'NATS_PASSWORD_%s=%s\n' "$(printf '%s' "$identity" | tr '[:lower:]' '[:upper:]')" "$(password)"
  done
}
# shellcheck disable=SC2046 # one argument per line: the lines have no spaces
write nats-users.env $(nats_passwords)
for identity in $nats_identities; do
  variable="NATS_PASSWORD_$(printf '%s' "$identity" | tr '[:lower:]' '[:upper:]')"
  if ! grep -q "^$variable=" "$dir/nats-users.env"; then
    printf '%s=%s\n' "$variable" "$(password)" >>"$dir/nats-users.env"
    echo "added   $variable to $dir/nats-users.env"
  fi
done
nats_tls
write kyc-pii.env "keys=$(key_ring "pii$(date +%Y%m)")"
write payouts-pii.env "keys=$(key_ring "bank$(date +%Y%m)")"
write tax-pii.env "keys=$(key_ring "tin$(date +%Y%m)")"
write receipts-sealing.env "keys=$(key_ring "seal$(date +%Y%m)")"
write webhooks-secrets.env "keys=$(key_ring "whk$(date +%Y%m)")"
# Empty unless a Stripe account is connected: the payments service then answers provider_not_configured for it.
write stripe.env "secret-key=${STRIPE_SECRET_KEY:-}" "webhook-secret=${STRIPE_WEBHOOK_SECRET:-}"
# Empty unless an SMTP server is given: risk then refuses email alerts and still sends webhook alerts.
write risk-smtp.env "url=${RISK_SMTP_URL:-}"
if grep -q 'treasury-pg-backup' "$overlay/kustomization.yaml"; then
  write pg-backup.env "ACCESS_KEY_ID=${BACKUP_ACCESS_KEY_ID:?set BACKUP_ACCESS_KEY_ID (object store for PostgreSQL backups)}" \
    "ACCESS_SECRET_KEY=${BACKUP_ACCESS_SECRET_KEY:?set BACKUP_ACCESS_SECRET_KEY}"
fi

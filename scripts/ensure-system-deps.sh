#!/usr/bin/env bash
# Makes sure the system programs the tests need are installed: PostgreSQL server binaries, nats-server,
# redis-server (skipped when TEST_DATABASE_URL / TEST_NATS_URL / TEST_REDIS_URL point at running servers),
# Chromium (always: browser tests) and poppler-utils (always: the tax PDF tests render with pdftoppm and read
# text back with pdftotext). As root with apt-get, installs what is missing; otherwise says exactly
# what to install and fails.
set -euo pipefail

have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/usr/local/sbin/$1" ] || [ -x "/sbin/$1" ]; }

# initdb, pg_ctl and postgres in one folder: pg_config --bindir, Debian's /usr/lib/postgresql/<v>/bin, or PATH.
have_postgres_server() {
  local dirs=()
  if have pg_config; then dirs+=("$(pg_config --bindir 2>/dev/null || true)"); fi
  for d in /usr/lib/postgresql/*/bin; do [ -d "$d" ] && dirs+=("$d"); done
  for d in "${dirs[@]}"; do
    [ -n "$d" ] && [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && [ -x "$d/postgres" ] && return 0
  done
  have initdb && have pg_ctl && have postgres
}

missing=()
if [ -z "${TEST_DATABASE_URL:-}" ] && ! have_postgres_server; then missing+=(postgresql); fi
if [ -z "${TEST_NATS_URL:-}" ] && ! have nats-server; then missing+=(nats-server); fi
if [ -z "${TEST_REDIS_URL:-}" ] && ! have redis-server; then missing+=(redis-server); fi
if ! have chromium && ! have chromium-browser; then missing+=(chromium); fi
if ! have pdftoppm || ! have pdftotext; then missing+=(poppler-utils); fi

if [ "${#missing[@]}" -eq 0 ]; then
  echo "system deps: ok (postgresql, nats-server, redis-server, chromium, poppler-utils or TEST_*_URL)"
  exit 0
fi

if [ "${EUID}" -eq 0 ] && have apt-get; then
  echo "system deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
  exit 0
fi

echo "system deps: missing ${missing[*]}" >&2
echo "Install them (Debian/Ubuntu):  sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
echo "or point the tests at running servers with TEST_DATABASE_URL / TEST_NATS_URL / TEST_REDIS_URL." >&2
exit 1

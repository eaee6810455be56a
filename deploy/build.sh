#!/usr/bin/env bash
# Builds the image's application tree into OUT_DIR: the one build and install step of deploy/Dockerfile, and the
# same script tests/deploy/image.int.test.ts runs on a copy of the build context.
#   1. Installs every dependency (dev ones included: the compiler) from the lockfile.
#   2. Compiles each service and the operator commands to JavaScript (deploy/bundle.mjs).
#   3. Lays out OUT_DIR: package manifests and lockfile, each service's migrations and compiled entry, and
#      node_modules with production dependencies only (no tsx, no TypeScript, no test tools).
# Usage: deploy/build.sh OUT_DIR   (run from anywhere; the build context is this script's parent folder)
set -euo pipefail

out="${1:?usage: deploy/build.sh OUT_DIR}"
src="$(cd "$(dirname "$0")/.." && pwd)"
cd "$src"

# NODE_ENV=production in the environment would make `npm ci` skip the compiler; the build needs it.
npm ci --include=dev --ignore-scripts --no-audit --no-fund --prefer-offline
# Install scripts stay off (no dependency runs code at install); the project's own patches are applied by hand.
npx --no-install patch-package --error-on-fail
rm -rf "$out"
mkdir -p "$out"
node deploy/bundle.mjs "$out"

cp package.json package-lock.json .npmrc "$out/"
cp -R patches "$out/"
for pkg in libs/*/ services/*/; do
  pkg="${pkg%/}"
  mkdir -p "$out/$pkg"
  # npm links each workspace by its manifest; the libraries' sources are inside the compiled entries.
  cp "$pkg/package.json" "$out/$pkg/"
  if [ -d "$pkg/migrations" ]; then cp -R "$pkg/migrations" "$out/$pkg/"; fi
  # Files a service serves as they are (the operator console's styles and script).
  if [ -d "$pkg/assets" ]; then cp -R "$pkg/assets" "$out/$pkg/"; fi
done

cd "$out"
npm ci --omit=dev --ignore-scripts --no-audit --no-fund --prefer-offline
# patch-package is a production dependency for this step: the pinned fix of postgres.js (ADR 0010) ships.
npx --no-install patch-package --error-on-fail
# The lockfile and manifests stay (npm ls works in the image); npm's own cache is not part of the tree.
echo "build: production tree ready in $out"

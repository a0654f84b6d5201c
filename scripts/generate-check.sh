#!/usr/bin/env bash
# Fails when the committed generated code under plugin/internal/pluginv1/ is
# not exactly what scripts/generate.sh produces from the .proto files with the
# pinned tool versions (see that script). Nothing in the tree is modified.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

"$ROOT/scripts/generate.sh" "$tmp"

if ! diff -ru "$ROOT/plugin/internal/pluginv1" "$tmp/plugin/internal/pluginv1"; then
	echo "generate-check: generated code is stale; run 'make generate' and commit the result" >&2
	exit 1
fi
echo "generate-check: generated code is up to date" >&2

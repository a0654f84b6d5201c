#!/usr/bin/env bash
# Reproduces host/ui/assets/vendor/mermaid.min.js, the pinned Mermaid build
# the web run browser (obversa ui) draws graphs with: fetches the pinned
# release from the npm registry (npm checks the registry's integrity hash),
# takes its self-contained dist/mermaid.min.js and checks it against the
# recorded sha256. `make mermaid` runs it; docs/decisions.md says why the
# file is committed.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=11.9.0
INTEGRITY=sha512-YdPXn9slEwO0omQfQIsW6vS84weVQftIyyTGAZCwM//MGhPzL1+l6vO6bkf0wnP4tHigH1alZ5Ooy3HXI2gOag==
SHA256=0b3ed4374117363815daefdadfcc20ff704d7dd4513b55ed803abddcbd86a898
DEST=host/ui/assets/vendor

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "mermaid@$VERSION" >/dev/null)
tgz="$tmp/mermaid-$VERSION.tgz"
got=$(printf 'sha512-%s' "$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)")
if [ "$got" != "$INTEGRITY" ]; then
  echo "mermaid@$VERSION: tarball integrity $got, want $INTEGRITY" >&2
  exit 1
fi
tar -xzf "$tgz" -C "$tmp" package/dist/mermaid.min.js package/LICENSE
echo "$SHA256  $tmp/package/dist/mermaid.min.js" | sha256sum -c --quiet
cp "$tmp/package/dist/mermaid.min.js" "$DEST/mermaid.min.js"
cp "$tmp/package/LICENSE" "$DEST/mermaid.LICENSE"
echo "mermaid@$VERSION -> $DEST/mermaid.min.js (sha256 $SHA256)"

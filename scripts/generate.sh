#!/usr/bin/env bash
# Regenerates the committed Go code of the plugin protocol
# (plugin/proto/obversa/plugin/v1/plugin.proto -> plugin/internal/pluginv1/).
#
# Pinned tool versions; bump them deliberately, regenerate, and commit the
# result together with the version change:
#   protoc              3.21.12   Debian bookworm package "protobuf-compiler"
#   protoc-gen-go       v1.36.12  google.golang.org/protobuf (matches go.mod)
#   protoc-gen-go-grpc  v1.6.2    google.golang.org/grpc/cmd/protoc-gen-go-grpc
#                                 (generated code needs grpc >= v1.64; go.mod
#                                 has v1.85.0)
#
# The Go plugins are installed into $TOOLS_BIN (default: .tools/bin under the
# repository root, ignored by git through .tools/.gitignore).
#
# Usage: scripts/generate.sh [OUT_ROOT]
#   OUT_ROOT is the directory that stands for the repository root when
#   writing; it defaults to the repository root itself. scripts/generate-check.sh
#   passes a temporary directory.
set -euo pipefail

readonly PROTOC_VERSION="3.21.12"
readonly PROTOC_GEN_GO_VERSION="v1.36.12"
readonly PROTOC_GEN_GO_GRPC_VERSION="v1.6.2"
readonly MODULE="github.com/obversa/obversa"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT_ROOT="${1:-$ROOT}"
TOOLS_BIN="${TOOLS_BIN:-$ROOT/.tools/bin}"

ensure_protoc() {
	local have=""
	if command -v protoc >/dev/null 2>&1; then
		have="$(protoc --version)"
	fi
	if [[ "$have" == "libprotoc $PROTOC_VERSION" ]]; then
		return
	fi
	if [[ -z "$have" ]] && command -v apt-get >/dev/null 2>&1 && [[ "$(id -u)" == 0 ]]; then
		echo "generate: installing protoc from apt (protobuf-compiler)" >&2
		apt-get install -y protobuf-compiler >/dev/null
		have="$(protoc --version)"
		if [[ "$have" == "libprotoc $PROTOC_VERSION" ]]; then
			return
		fi
	fi
	echo "generate: need protoc $PROTOC_VERSION (Debian bookworm: apt-get install protobuf-compiler); found: ${have:-none}" >&2
	exit 1
}

# ensure_go_tool BINARY PACKAGE VERSION installs PACKAGE@VERSION into
# $TOOLS_BIN unless the binary there was already built from that version.
ensure_go_tool() {
	local bin="$1" pkg="$2" version="$3"
	if [[ -x "$TOOLS_BIN/$bin" ]] &&
		go version -m "$TOOLS_BIN/$bin" 2>/dev/null | grep -qE "^[[:space:]]+mod[[:space:]].*[[:space:]]${version}([[:space:]]|$)"; then
		return
	fi
	echo "generate: installing $pkg@$version into $TOOLS_BIN" >&2
	GOBIN="$TOOLS_BIN" GOFLAGS=-mod=mod go install "$pkg@$version"
}

mkdir -p "$TOOLS_BIN"
if [[ "$TOOLS_BIN" == "$ROOT/.tools/bin" && ! -e "$ROOT/.tools/.gitignore" ]]; then
	printf '*\n' >"$ROOT/.tools/.gitignore"
fi
ensure_protoc
ensure_go_tool protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go "$PROTOC_GEN_GO_VERSION"
ensure_go_tool protoc-gen-go-grpc google.golang.org/grpc/cmd/protoc-gen-go-grpc "$PROTOC_GEN_GO_GRPC_VERSION"

out_dir="$OUT_ROOT/plugin/internal/pluginv1"
mkdir -p "$out_dir"
rm -f "$out_dir"/*.pb.go

cd "$ROOT/plugin/proto"
PATH="$TOOLS_BIN:$PATH" protoc \
	--plugin=protoc-gen-go="$TOOLS_BIN/protoc-gen-go" \
	--plugin=protoc-gen-go-grpc="$TOOLS_BIN/protoc-gen-go-grpc" \
	--go_out="$OUT_ROOT" --go_opt=module="$MODULE" \
	--go-grpc_out="$OUT_ROOT" --go-grpc_opt=module="$MODULE" \
	obversa/plugin/v1/plugin.proto

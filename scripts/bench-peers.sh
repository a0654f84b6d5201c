#!/usr/bin/env bash
# make bench-peers: Obversa's graph benchmarks beside DBOS Transact for Go
# on the same workloads and the same PostgreSQL, with the ratios
# DBOS ÷ Obversa measured in the same run (docs/benchmarks.md).
#
#   scripts/bench-peers.sh            # ROUNDS=3 rounds, 3 runs of each workload a round
#   ROUNDS=1 scripts/bench-peers.sh   # one round
#
# Each round runs, one after another: BenchmarkFloor/fdatasync (the
# round's write+fdatasync floor, the table's fdatasync column),
# BenchmarkChain200 and
# BenchmarkDAG1000FanOut32 (the record in a storage directory),
# BenchmarkPGChain200Run and BenchmarkPGDAG1000FanOut32 (the record in
# PostgreSQL, store/pgstore) and the same two workloads as DBOS workflows
# of no-op steps (bench/peers, a module of its own, so DBOS stays out of
# Obversa's go.mod; Go fetches it from the module proxy). Only ratios
# within one round mean much: a machine's flush time drifts by the hour.
#
# PostgreSQL is a private cluster on loopback (scripts/pg-test-cluster.sh:
# Debian's postgresql package, installed when missing and run as root;
# durability at PostgreSQL's defaults), created fresh for this run in
# OBVERSA_PG_DIR (default /tmp/obversa-bench-peers) on OBVERSA_PG_PORT
# (default 55442), and removed when the script ends. Benchmarks on one
# machine can serialise on the lock file /tmp/obversa-bench.lock.
# Output: OUT (default bench-peers.out/): rounds.txt and table.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
ROUNDS=${ROUNDS:-3}
OUT=${OUT:-$ROOT/bench-peers.out}
export OBVERSA_PG_DIR=${OBVERSA_PG_DIR:-/tmp/obversa-bench-peers}
export OBVERSA_PG_PORT=${OBVERSA_PG_PORT:-55442}
GO=${GO:-go}

mkdir -p "$OUT"
echo "bench-peers: building" >&2
"$GO" test -c -o "$OUT/obversa.test" ./cmd/obversa
(cd bench/peers && "$GO" vet . && "$GO" test -count=1 . >/dev/null && "$GO" build -o "$OUT/peers" .)

# A fresh cluster, whatever an earlier run left.
scripts/pg-test-cluster.sh destroy
trap 'scripts/pg-test-cluster.sh destroy' EXIT
URL=$(scripts/pg-test-cluster.sh start)

exec 9>/tmp/obversa-bench.lock
flock -w 300 9 || echo "bench-peers: another benchmark holds /tmp/obversa-bench.lock after 300 s; measuring anyway" >&2

: >"$OUT/rounds.txt"
for r in $(seq 1 "$ROUNDS"); do
  echo "== round $r" | tee -a "$OUT/rounds.txt"
  echo "# load average before the round: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/rounds.txt"
  # Two invocations: a pattern with a sub-benchmark part (Floor/fdatasync)
  # would skip every benchmark that has no sub-benchmarks.
  for pat in '^BenchmarkFloor$/^fdatasync$' '^Benchmark(Chain200|DAG1000FanOut32|PGChain200Run|PGDAG1000FanOut32)$'; do
    (cd cmd/obversa && OBVERSA_TEST_POSTGRES=$URL "$OUT/obversa.test" -test.run '^$' \
      -test.bench "$pat" -test.benchtime 3x) 2>&1 |
      grep -E '^(Benchmark|--- FAIL|FAIL|panic)' | tee -a "$OUT/rounds.txt"
  done
  "$OUT/peers" dbos -db "$URL" -reps 3 | tee -a "$OUT/rounds.txt"
done
echo
"$OUT/peers" table <"$OUT/rounds.txt" | tee "$OUT/table.txt"
# A workload without Obversa's figure is a broken run, not a result.
if grep -q -- '- / -' "$OUT/table.txt"; then
  echo "bench-peers: an Obversa benchmark printed no figure; see $OUT/rounds.txt" >&2
  exit 1
fi

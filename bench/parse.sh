#!/usr/bin/env bash
# Strict parse against encoding/json.Valid, in one run:
#
#   bash bench/parse.sh        (from anywhere; needs Go)
#
# Runs mcpparse's BenchmarkParse (Parse of a tools/call: strict scan,
# targets, canonical arguments, SHA-256; beside the floor and json.Valid
# of the same body) for the mixed, numbers and text payloads at 1 KiB, 64 KiB and
# 1 MiB, and prints MB per CPU second of each (the benchmark's cpu-MB/s:
# CPU time, which on a shared machine does not count the time other
# processes hold the CPU, as wall-clock MB/s does) and strict / json.Valid
# (issue 20's target: at least 1.00x), and the same for the floor: one
# scalar loop that follows the grammar and copies the body, then its
# SHA-256, with none of the strict work (mcpparse's floorPass): the most a
# scalar pass that hashes a canonical copy could reach. Of BENCH_COUNT
# runs the best of each is kept. strict is the path the machine runs (on
# amd64 with AVX2: the vectorized one, mcpparse/simd.go), scalar the
# scalar path on the same body (issue 31: both are reported).
#
# Environment: BENCH_COUNT (3 runs, the best of each kept), BENCH_TIME
# (0.5s), BENCH_CPU (1: GOMAXPROCS for the run).
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${BENCH_COUNT:-3}
TIME=${BENCH_TIME:-0.5s}
CPU=${BENCH_CPU:-1}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test -run '^$' -bench '^BenchmarkParse$' -benchtime "$TIME" -count "$COUNT" -cpu "$CPU" ./mcpparse/ | tee "$out" >&2
echo
path=scalar
if [ "$(go env GOARCH)" = amd64 ] && grep -qw avx2 /proc/cpuinfo; then path="vectorized (AVX2)"; fi
echo "strict: the $path path; scalar: the scalar path"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr), $(go version | cut -d' ' -f3); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
awk '
  /^BenchmarkParse\// {
    name = $1; sub(/^BenchmarkParse\//, "", name); sub(/-[0-9]+$/, "", name)
    n = split(name, part, "/"); kind = part[n]; key = part[1] "/" part[2]
    for (i = 2; i <= NF; i++) if ($(i+1) == "cpu-MB/s" && $i > best[key, kind]) best[key, kind] = $i
    for (i = 2; i <= NF; i++) if ($(i+1) == "allocs/op") allocs[key, kind] = $i
    if (!(key in seen)) { seen[key] = 1; order[++k] = key }
  }
  END {
    printf "| body | strict MB/CPU-s | json.Valid MB/CPU-s | strict / Valid | floor MB/CPU-s | floor / Valid | strict allocs/op | scalar MB/CPU-s | scalar / Valid |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    for (i = 1; i <= k; i++) {
      key = order[i]; s = best[key, "strict"]; v = best[key, "json.Valid"]; f = best[key, "floor"]; c = best[key, "strict-scalar"]
      printf "| %s | %.0f | %.0f | %.2fx | %.0f | %.2fx | %s | %.0f | %.2fx |\n", key, s, v, (v > 0 ? s / v : 0), f, (v > 0 ? f / v : 0), allocs[key, "strict"], c, (v > 0 ? c / v : 0)
    }
  }' "$out"

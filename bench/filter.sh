#!/usr/bin/env bash
# The response seam's list filter in process (issues 17 and 18), in one run:
#
#   bash bench/filter.sh       (from anywhere; needs Go)
#
# Runs internal/listfilter's BenchmarkFilter500 (Filter alone on a
# 500-tool tools/list, > 64 KiB, reference policy) and extproc's
# BenchmarkFilterPin500 (the same list through the processor's buffered
# JSON path: filter = pin_mode off; pin-cached = examples/policy.yaml's
# pin_mode tofu, every tool fingerprinted through a warm toolpin.Cache and
# observed in a memory store; pin-fresh = a cold Cache per list), and
# prints MB/s of the upstream's body (target >= 150) and time per list
# relative to the processor's filter alone (issue 18: fingerprints add
# <= 20%, pin-cached <= 1.20x). Of BENCH_COUNT runs the best of each is kept.
#
# Environment: BENCH_COUNT (3), BENCH_TIME (1s), BENCH_CPU (1: GOMAXPROCS).
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${BENCH_COUNT:-3}
TIME=${BENCH_TIME:-1s}
CPU=${BENCH_CPU:-1}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test -run '^$' -bench '^(BenchmarkFilter500|BenchmarkFilterPin500)$' -benchtime "$TIME" -count "$COUNT" -cpu "$CPU" \
  ./internal/listfilter/ ./extproc/ | tee "$out" >&2
echo
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr), $(go version | cut -d' ' -f3); load average $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews every figure)"
echo
awk '
  /^Benchmark/ {
    name = $1; sub(/-[0-9]+$/, "", name)
    for (i = 2; i <= NF; i++) {
      if ($(i+1) == "ns/op" && (!(name in ns) || $i < ns[name])) ns[name] = $i
      if ($(i+1) == "MB/s" && $i > mbs[name]) mbs[name] = $i
      if ($(i+1) == "allocs/op") allocs[name] = $i
    }
    if (!(name in seen)) { seen[name] = 1; order[++k] = name }
  }
  END {
    base = ns["BenchmarkFilterPin500/filter"]
    printf "| benchmark | µs per list | MB/s (target >= 150) | / processor filter alone | allocs/op |\n|---|---:|---:|---:|---:|\n"
    for (i = 1; i <= k; i++) {
      n = order[i]
      r = (base > 0 && n ~ /FilterPin500/) ? sprintf("%.2fx", ns[n] / base) : "-"
      printf "| %s | %.0f | %.0f | %s | %s |\n", n, ns[n] / 1000, mbs[n], r, allocs[n]
    }
  }' "$out"

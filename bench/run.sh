#!/usr/bin/env bash
# CPU per Check: mcp-extauthz against a do-nothing ext_authz server.
#
#   bash bench/run.sh        (from anywhere; needs Go, taskset and jq; 2+ CPUs)
#
# The server under test runs pinned to CPU 0 and the load generator, ghz
# (installed here with `go install`), pinned to CPU 1: 50 streams on one
# connection, for BENCH_DURATION per run. For each request kind and each
# server, the server's utime+stime from /proc/PID/stat over the run is
# divided by the requests completed. Two rounds, null and ours alternating
# run by run, so drift on a shared machine hits both alike. Prints µs of
# server CPU per request and the ratio ours / null.
#
# Environment: BENCH_DURATION (8s), BENCH_ROUNDS (2), BENCH_STREAMS (50),
# BENCH_PORT (19391, and the next one), BENCH_SERVER_CPU (0),
# BENCH_LOAD_CPU (1), GHZ_VERSION, BENCH_EXTAUTHZ (a binary to measure
# instead of this tree's, e.g. a baseline build).
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${BENCH_DURATION:-8s}
ROUNDS=${BENCH_ROUNDS:-2}
STREAMS=${BENCH_STREAMS:-50}
PORT=${BENCH_PORT:-19391}
SERVER_CPU=${BENCH_SERVER_CPU:-0}
LOAD_CPU=${BENCH_LOAD_CPU:-1}
GHZ_VERSION=${GHZ_VERSION:-v0.121.0}

for tool in go taskset jq; do
  command -v "$tool" >/dev/null || { echo "bench: $tool is required" >&2; exit 1; }
done
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "== build" >&2
bin=$work/bin
mkdir -p "$bin"
go build -o "$bin/extauthz" ./cmd/extauthz
ours_bin=${BENCH_EXTAUTHZ:-$bin/extauthz} # another build of the service, e.g. a baseline
go build -o "$bin/bench" ./bench
if ! GOBIN=$bin go install "github.com/bojand/ghz/cmd/ghz@$GHZ_VERSION" 2>"$work/ghz-install.log"; then
  echo "bench: ghz $GHZ_VERSION did not install (see below); trying @latest" >&2
  cat "$work/ghz-install.log" >&2
  GOBIN=$bin go install github.com/bojand/ghz/cmd/ghz@latest
fi

token=$("$bin/extauthz" token --config examples/config.yaml --sub alice --ttl 2h)
"$bin/bench" gen --token "$token" --out "$work" --examples examples/requests

echo "== servers (CPU $SERVER_CPU)" >&2
ours_addr=127.0.0.1:$PORT
null_addr=127.0.0.1:$((PORT + 1))
taskset -c "$SERVER_CPU" "$ours_bin" serve --config examples/config.yaml \
  --grpc-addr "$ours_addr" --http-addr "" >"$work/decisions.log" 2>"$work/ours.err" &
pids+=($!); ours_pid=$!
taskset -c "$SERVER_CPU" "$bin/bench" null --addr "$null_addr" 2>"$work/null.err" &
pids+=($!); null_pid=$!
for _ in $(seq 50); do
  "$bin/bench" probe --addr "$ours_addr" --dir "$work" >"$work/probe.out" 2>&1 && break
  sleep 0.2
done
cat "$work/probe.out" >&2
"$bin/bench" probe --addr "$ours_addr" --dir "$work" >/dev/null

ticks() { # utime + stime of PID, in clock ticks
  awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"
}
hz=$(getconf CLK_TCK)

ghz_run() { # addr case duration -> completed requests
  taskset -c "$LOAD_CPU" "$bin/ghz" --insecure --cpus 1 --connections 1 -c "$STREAMS" -z "$3" \
    --protoset "$work/auth.protoset" --call envoy.service.auth.v3.Authorization/Check \
    --binary -B "$work/$2.bin" -O json "$1" >"$work/ghz.json"
  jq '.statusCodeDistribution.OK // 0' "$work/ghz.json"
}

cases="small 64KiB denied"
echo "== warm-up" >&2
for c in $cases; do
  ghz_run "$ours_addr" "$c" 2s >/dev/null
  ghz_run "$null_addr" "$c" 2s >/dev/null
done

results=$work/results
: >"$results"
for round in $(seq "$ROUNDS"); do
  for c in $cases; do
    for server in null ours; do
      if [ "$server" = null ]; then pid=$null_pid addr=$null_addr; else pid=$ours_pid addr=$ours_addr; fi
      t0=$(ticks "$pid")
      n=$(ghz_run "$addr" "$c" "$DURATION")
      t1=$(ticks "$pid")
      echo "$round $c $server $n $((t1 - t0))" >>"$results"
      printf 'round %s %-7s %-5s %8d requests %6d ticks\n' "$round" "$c" "$server" "$n" "$((t1 - t0))" >&2
    done
  done
done

echo
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr), $(go version | cut -d' ' -f3)"
echo "load: ghz, $STREAMS streams on 1 connection, $ROUNDS rounds x $DURATION per server and request; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "ours peak RSS: $(awk '/VmHWM/ {print $2, $3}' "/proc/$ours_pid/status")"
echo
awk -v hz="$hz" '
  { req[$2 "," $3] += $4; tick[$2 "," $3] += $5; seen[$2] = 1 }
  END {
    printf "| request | null µs CPU/req | ours µs CPU/req | ours / null | ours req/s of CPU |\n"
    printf "|---|---:|---:|---:|---:|\n"
    n = split("small 64KiB denied", order, " ")
    for (i = 1; i <= n; i++) {
      c = order[i]
      if (!(c in seen)) continue
      nu = tick[c ",null"] / hz / req[c ",null"] * 1e6
      ou = tick[c ",ours"] / hz / req[c ",ours"] * 1e6
      printf "| %s | %.1f | %.1f | %.2fx | %.0f |\n", c, nu, ou, ou / nu, 1e6 / ou
    }
  }' "$results"

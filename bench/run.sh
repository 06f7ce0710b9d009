#!/usr/bin/env bash
# mcp-extauthz against a do-nothing ext_authz server (bench null), on this
# machine, in one run:
#
#   bash bench/run.sh [cpu|latency|seam|sign|all]   (from anywhere; needs Go, taskset, jq; 2+ CPUs)
#
# cpu (the default): CPU per Check. The server under test runs pinned to
# CPU 0 and the load generator, ghz (installed here with `go install`),
# pinned to CPU 1: BENCH_STREAMS (50) streams on one connection, closed
# loop, for BENCH_DURATION per run. For each request kind and each server,
# the server's utime+stime from /proc/PID/stat over the run is divided by
# the requests completed. Two rounds, null and ours alternating run by run,
# so drift on a shared machine hits both alike. Prints µs of server CPU per
# request and the ratio ours / null, for a small allowed tools/call, 64 KiB
# of mixed arguments, 64 KiB mostly numbers, 64 KiB mostly non-ASCII text,
# and a denied call; and each server's largest RSS (VmRSS sampled every
# 0.1 s) while it served the 64 KiB requests on those streams.
#
# latency: open loop (bench load, pinned to CPU 1): requests due at a fixed
# rate (1,000, 2,000 and 5,000 per second) on 64 streams of one connection,
# each timed from its release on schedule (waiting for a free stream
# counts); small and 64 KiB; null and ours alternating. Prints p50, p99 and p99.9 in µs and ours / null
# at p99. A request that fails or is not answered counts as infinitely slow.
#
# seam: the response seam (issues 17, 26). CPU per request of the service as a
# request through envoy/sidecar.yaml costs it: its Check plus one ext_proc
# stream, which every route to the MCP server opens (ProcessingRequests as
# Envoy's ext_proc filter sends them, one answer awaited per message), against the
# null pair (bench null: Check answers OK, every ProcessingRequest gets the
# empty answer of its kind) on the same bytes. bench seamload, pinned to
# CPU 1, runs BENCH_STREAMS closed-loop workers over two connections (the
# sidecar's two clusters), for BENCH_DURATION per run, null and ours
# alternating, BENCH_ROUNDS rounds. Every case's side stream opens at the
# response headers, then takes the answer in the body mode the processor
# picks (issue 31: no request headers; a first page has no cursor): a
# tools/list of 50 tools answered as JSON (one buffered body) and as SSE
# (three chunks and the empty end of stream), filtered to 3 by the
# reference policy (target: ours <= 2x the pair); an allowed tools/call
# answered as JSON and as SSE, an initialize (JSON) and a ping (JSON and
# SSE) (target: ours <= 1.3x the pair). The message shapes are printed
# first, and the service is probed once: each list must come back filtered.
#
# sign: the cost of signed decisions (issue 28). A second instance of ours
# with --decision-key-file (the published test Ed25519 key; the quick-start
# config allows it) on BENCH_PORT+2, and ours without, take the small
# allowed tools/call in turn (ghz as in cpu), BENCH_ROUNDS rounds: µs of
# server CPU per request of each, and the difference (target: <= 10 µs).
#
# Both servers get byte-identical CheckRequests (the same files; bench load
# sends their bytes as they are); their shape is printed first.
#
# Environment: BENCH_DURATION (8s), BENCH_ROUNDS (2), BENCH_STREAMS (50),
# BENCH_LAT_DURATION (10s), BENCH_LAT_RATES ("1000 2000 5000"),
# BENCH_LAT_STREAMS (64), BENCH_PORT (19391, and the next one),
# BENCH_SERVER_CPU (0), BENCH_LOAD_CPU (1), GHZ_VERSION, BENCH_EXTAUTHZ (a
# binary to measure instead of this tree's, e.g. a baseline build),
# BENCH_SERVE_FLAGS (more serve flags for ours, e.g. "--policy FILE" with
# pin_mode off, to split the cost of pinning from the seam's).
set -euo pipefail
cd "$(dirname "$0")/.."

MODE=${1:-cpu}
case $MODE in cpu | latency | seam | sign | all) ;; *)
  echo "usage: bash bench/run.sh [cpu|latency|seam|sign|all]" >&2
  exit 2
  ;;
esac
DURATION=${BENCH_DURATION:-8s}
LAT_DURATION=${BENCH_LAT_DURATION:-10s}
LAT_RATES=${BENCH_LAT_RATES:-1000 2000 5000}
LAT_STREAMS=${BENCH_LAT_STREAMS:-64}
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
if [ "$MODE" = cpu ] || [ "$MODE" = sign ] || [ "$MODE" = all ]; then
  if ! GOBIN=$bin go install "github.com/bojand/ghz/cmd/ghz@$GHZ_VERSION" 2>"$work/ghz-install.log"; then
    echo "bench: ghz $GHZ_VERSION did not install (see below); trying @latest" >&2
    cat "$work/ghz-install.log" >&2
    GOBIN=$bin go install github.com/bojand/ghz/cmd/ghz@latest
  fi
fi

token=$("$bin/extauthz" token --config examples/config.yaml --sub alice --ttl 2h)
"$bin/bench" gen --token "$token" --out "$work" --examples examples/requests
echo "== CheckRequests (the same bytes to both servers)"
"$bin/bench" shape --dir "$work"

echo "== servers (CPU $SERVER_CPU)" >&2
ours_addr=127.0.0.1:$PORT
null_addr=127.0.0.1:$((PORT + 1))
# shellcheck disable=SC2086 # BENCH_SERVE_FLAGS: several flags
taskset -c "$SERVER_CPU" "$ours_bin" serve --config examples/config.yaml \
  --grpc-addr "$ours_addr" --http-addr "" ${BENCH_SERVE_FLAGS:-} >"$work/decisions.log" 2>"$work/ours.err" &
pids+=($!); ours_pid=$!
signed_addr=127.0.0.1:$((PORT + 2))
if [ "$MODE" = sign ] || [ "$MODE" = all ]; then
  # shellcheck disable=SC2086 # BENCH_SERVE_FLAGS: several flags
  taskset -c "$SERVER_CPU" "$ours_bin" serve --config examples/config.yaml \
    --grpc-addr "$signed_addr" --http-addr "" --decision-key-file examples/TEST-ONLY-decision-key.jwk.json ${BENCH_SERVE_FLAGS:-} \
    >/dev/null 2>"$work/signed.err" &
  pids+=($!); signed_pid=$!
  for _ in $(seq 50); do
    "$bin/bench" probe --addr "$signed_addr" --dir "$work" >/dev/null 2>&1 && break
    sleep 0.2
  done
fi
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

rss_sampler() { # pid file: append VmRSS (kB) every 0.1 s until killed
  while awk '/^VmRSS/ {print $2}' "/proc/$1/status" >>"$2" 2>/dev/null; do sleep 0.1; done
}

machine() {
  echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr), $(go version | cut -d' ' -f3); load average $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews every figure)"
}

cpu_mode() {
  local cases="small 64KiB numbers text denied"
  echo "== warm-up" >&2
  for c in $cases; do
    ghz_run "$ours_addr" "$c" 2s >/dev/null
    ghz_run "$null_addr" "$c" 2s >/dev/null
  done

  local results=$work/results
  : >"$results"
  for round in $(seq "$ROUNDS"); do
    for c in $cases; do
      for server in null ours; do
        if [ "$server" = null ]; then pid=$null_pid addr=$null_addr; else pid=$ours_pid addr=$ours_addr; fi
        local sampler=""
        case $c in 64KiB | numbers | text)
          rss_sampler "$pid" "$work/rss.$server" &
          sampler=$!
          ;;
        esac
        t0=$(ticks "$pid")
        n=$(ghz_run "$addr" "$c" "$DURATION")
        t1=$(ticks "$pid")
        if [ -n "$sampler" ]; then kill "$sampler" 2>/dev/null || true; wait "$sampler" 2>/dev/null || true; fi
        echo "$round $c $server $n $((t1 - t0))" >>"$results"
        printf 'round %s %-7s %-5s %8d requests %6d ticks\n' "$round" "$c" "$server" "$n" "$((t1 - t0))" >&2
      done
    done
  done

  echo
  machine
  echo "load: ghz closed loop, $STREAMS streams on 1 connection, $ROUNDS rounds x $DURATION per server and request"
  for server in null ours; do
    echo "$server: largest RSS while serving 64 KiB requests on $STREAMS streams: $(sort -n "$work/rss.$server" | tail -1 | awk '{printf "%.1f MiB", $1 / 1024}')"
  done
  echo "ours peak RSS over the whole run (VmHWM): $(awk '/VmHWM/ {print $2, $3}' "/proc/$ours_pid/status")"
  echo
  awk -v hz="$hz" '
    { req[$2 "," $3] += $4; tick[$2 "," $3] += $5; seen[$2] = 1 }
    END {
      printf "| request | null µs CPU/req | ours µs CPU/req | ours / null | ours req/s of CPU |\n"
      printf "|---|---:|---:|---:|---:|\n"
      n = split("small 64KiB numbers text denied", order, " ")
      for (i = 1; i <= n; i++) {
        c = order[i]
        if (!(c in seen)) continue
        nu = tick[c ",null"] / hz / req[c ",null"] * 1e6
        ou = tick[c ",ours"] / hz / req[c ",ours"] * 1e6
        printf "| %s | %.1f | %.1f | %.2fx | %.0f |\n", c, nu, ou, ou / nu, 1e6 / ou
      }
    }' "$results"
}

latency_mode() {
  local cases="small 64KiB"
  echo "== warm-up (open loop)" >&2
  for c in $cases; do
    for addr in "$null_addr" "$ours_addr"; do
      taskset -c "$LOAD_CPU" "$bin/bench" load --addr "$addr" --dir "$work" --case "$c" --rps 1000 \
        --streams "$LAT_STREAMS" --duration 2s >/dev/null
    done
  done
  local results=$work/latency
  : >"$results"
  for c in $cases; do
    for rate in $LAT_RATES; do
      for server in null ours; do
        if [ "$server" = null ]; then addr=$null_addr; else addr=$ours_addr; fi
        line=$(taskset -c "$LOAD_CPU" "$bin/bench" load --addr "$addr" --dir "$work" --case "$c" --rps "$rate" \
          --streams "$LAT_STREAMS" --duration "$LAT_DURATION")
        echo "$c $server $line" >>"$results"
        printf '%-6s %-5s %s\n' "$c" "$server" "$line" >&2
      done
    done
  done
  echo
  machine
  echo "load: bench load, open loop, $LAT_STREAMS streams on 1 connection, $LAT_DURATION per rate, server and request; latency from each request's release on schedule, in µs"
  echo
  awk '
    { # c server rate R due N ok N denied N failed N achieved N p50 X p99 X p99.9 X max X
      k = $1 "," $4 "," $2
      p50[k] = $16; p99[k] = $18; p999[k] = $20; ach[k] = $14; bad[k] = $10 + $12
      if (!(($1 "," $4) in seen)) { seen[$1 "," $4] = 1; order[++n] = $1 "," $4 }
    }
    END {
      printf "| request | rate/s | null p50 / p99 / p99.9 | ours p50 / p99 / p99.9 | ours / null p99 | ours achieved/s, not OK |\n"
      printf "|---|---:|---:|---:|---:|---:|\n"
      for (i = 1; i <= n; i++) {
        split(order[i], f, ",")
        kn = order[i] ",null"; ko = order[i] ",ours"
        r = (p99[kn] == "inf" || p99[ko] == "inf" || p99[kn] == 0) ? "-" : sprintf("%.2fx", p99[ko] / p99[kn])
        printf "| %s | %s | %s / %s / %s | %s / %s / %s | %s | %s, %d |\n", f[1], f[2], p50[kn], p99[kn], p999[kn], p50[ko], p99[ko], p999[ko], r, ach[ko], bad[ko]
      }
    }' "$results"
}

seam_mode() {
  local cases="list-json list-sse call-json call-sse initialize-json ping-json ping-sse"
  "$bin/bench" seamgen --addr "$ours_addr" --token "$token" --out "$work" --examples examples/requests
  echo "== seam: messages per request (the same bytes to both servers)"
  "$bin/bench" seamshape --dir "$work"
  echo "== seam: one of each, ours (lists must come back filtered) and null"
  "$bin/bench" seamprobe --addr "$ours_addr" --dir "$work" --filtered | sed 's/^/ours /'
  "$bin/bench" seamprobe --addr "$null_addr" --dir "$work" | sed 's/^/null /'
  echo "== warm-up (seam)" >&2
  for c in $cases; do
    for addr in "$null_addr" "$ours_addr"; do
      taskset -c "$LOAD_CPU" "$bin/bench" seamload --addr "$addr" --dir "$work" --case "$c" --streams "$STREAMS" --duration 2s >/dev/null
    done
  done
  local results=$work/seam
  : >"$results"
  for round in $(seq "$ROUNDS"); do
    for c in $cases; do
      for server in null ours; do
        if [ "$server" = null ]; then pid=$null_pid addr=$null_addr; else pid=$ours_pid addr=$ours_addr; fi
        t0=$(ticks "$pid")
        line=$(taskset -c "$LOAD_CPU" "$bin/bench" seamload --addr "$addr" --dir "$work" --case "$c" --streams "$STREAMS" --duration "$DURATION")
        t1=$(ticks "$pid")
        read -r _ n _ failed <<<"$line"
        echo "$round $c $server $n $((t1 - t0)) $failed" >>"$results"
        printf 'round %s %-10s %-5s %8d requests %6d ticks %d failed\n' "$round" "$c" "$server" "$n" "$((t1 - t0))" "$failed" >&2
      done
    done
  done
  echo
  machine
  echo "load: bench seamload closed loop, $STREAMS workers on 2 connections (Check; ext_proc), $ROUNDS rounds x $DURATION per server and request"
  echo
  awk -v hz="$hz" '
    { req[$2 "," $3] += $4; tick[$2 "," $3] += $5; bad[$2 "," $3] += $6; seen[$2] = 1 }
    END {
      printf "| request (sidecar route) | null pair µs CPU/req | ours µs CPU/req | ours / null | target | failed (null, ours) |\n"
      printf "|---|---:|---:|---:|---|---:|\n"
      n = split("list-json list-sse call-json call-sse initialize-json ping-json ping-sse", order, " ")
      split("tools/list 50 tools, JSON|tools/list 50 tools, SSE|tools/call, JSON (receipt)|tools/call, SSE (receipt)|initialize, JSON|ping, JSON|ping, SSE", label, "|")
      split("<= 2x|<= 2x|<= 1.3x|<= 1.3x|<= 1.3x|<= 1.3x|<= 1.3x", target, "|")
      for (i = 1; i <= n; i++) {
        c = order[i]
        if (!(c in seen)) continue
        nu = tick[c ",null"] / hz / req[c ",null"] * 1e6
        ou = tick[c ",ours"] / hz / req[c ",ours"] * 1e6
        printf "| %s | %.1f | %.1f | %.2fx | %s | %d, %d |\n", label[i], nu, ou, ou / nu, target[i], bad[c ",null"], bad[c ",ours"]
      }
    }' "$results"
}

sign_mode() {
  echo "== warm-up (signing)" >&2
  ghz_run "$ours_addr" small 2s >/dev/null
  ghz_run "$signed_addr" small 2s >/dev/null
  local results=$work/sign-results
  : >"$results"
  for round in $(seq "$ROUNDS"); do
    for server in off on; do
      if [ "$server" = off ]; then pid=$ours_pid addr=$ours_addr; else pid=$signed_pid addr=$signed_addr; fi
      t0=$(ticks "$pid")
      n=$(ghz_run "$addr" small "$DURATION")
      t1=$(ticks "$pid")
      echo "$round $server $n $((t1 - t0))" >>"$results"
      printf 'round %s signing %-3s %8d requests %6d ticks\n' "$round" "$server" "$n" "$((t1 - t0))" >&2
    done
  done
  echo
  machine
  echo "load: ghz closed loop, $STREAMS streams on 1 connection, $ROUNDS rounds x $DURATION per server; a small allowed tools/call"
  echo
  awk -v hz="$hz" '
    { req[$2] += $3; tick[$2] += $4 }
    END {
      off = tick["off"] / hz / req["off"] * 1e6
      on = tick["on"] / hz / req["on"] * 1e6
      printf "| request | signing off µs CPU/req | signing on (Ed25519) µs CPU/req | added µs | on / off | target |\n"
      printf "|---|---:|---:|---:|---:|---|\n"
      printf "| small allowed tools/call | %.1f | %.1f | %.1f | %.2fx | <= 10 µs added |\n", off, on, on - off, on / off
    }' "$results"
}

if [ "$MODE" = cpu ] || [ "$MODE" = all ]; then cpu_mode; fi
if [ "$MODE" = sign ] || [ "$MODE" = all ]; then sign_mode; fi
if [ "$MODE" = seam ] || [ "$MODE" = all ]; then seam_mode; fi
if [ "$MODE" = latency ] || [ "$MODE" = all ]; then latency_mode; fi

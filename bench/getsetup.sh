#!/usr/bin/env bash
# GET stream setup against a POST through the sidecar (issue 31), in one run:
#
#   bash bench/getsetup.sh   (from anywhere; needs Go and the e2e rig's Envoy
#                             stand-in, ../shared/e2e-sdk or ENVOYSHIM_DIR)
#
# The service (examples/config.yaml) and the Envoy stand-in on
# envoy/sidecar.yaml (ext_authz, then the ext_proc side stream on every
# route), each on loopback, in front of bench setup's do-nothing MCP
# upstream (a GET gets the headers of an SSE stream at once, a POST a
# result). bench setup sends, open loop, a GET and a POST ping in turn at
# each rate of BENCH_SETUP_RATES, timing each from its release on schedule
# to its arrival at the upstream (what decides the race of a server that
# sends on the GET stream a request the client's next POST provokes) and
# to its response headers, and prints p50 and p99 in µs and GET / POST.
# The stand-in is not Envoy (its README lists where it differs); what it
# shows is the round trips each request costs: Check, the side stream's
# messages before the upstream (none since issue 31) and after it.
#
# Environment: BENCH_SETUP_RATES ("200 1000"), BENCH_DURATION (10s),
# BENCH_PORT (19491, and the next three), ENVOYSHIM_DIR
# (../shared/e2e-sdk), BENCH_EXTAUTHZ (a binary to measure instead of this
# tree's), BENCH_SIDECAR (a sidecar.yaml to run instead of this tree's).
set -euo pipefail
cd "$(dirname "$0")/.."
RATES=${BENCH_SETUP_RATES:-"200 1000"}
DURATION=${BENCH_DURATION:-10s}
PORT=${BENCH_PORT:-19491}
SHIM=${ENVOYSHIM_DIR:-../shared/e2e-sdk}
SIDECAR=${BENCH_SIDECAR:-envoy/sidecar.yaml}
[ -f "$SHIM/go.mod" ] || { echo "getsetup: no Envoy stand-in at $SHIM (set ENVOYSHIM_DIR)" >&2; exit 2; }
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
bin=$work/bin
mkdir -p "$bin"
go build -o "$bin/extauthz" ./cmd/extauthz
go build -o "$bin/bench" ./bench
(cd "$SHIM" && go build -o "$bin/envoyshim" .)
ours=${BENCH_EXTAUTHZ:-$bin/extauthz}
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "getsetup: port $1 never opened" >&2; exit 1; }
p_authz=$PORT; p_http=$((PORT + 1)); p_up=$((PORT + 2)); p_shim=$((PORT + 3))
"$ours" serve --config examples/config.yaml --grpc-addr "127.0.0.1:$p_authz" --http-addr "127.0.0.1:$p_http" >/dev/null 2>"$work/extauthz.err" &
pids+=($!)
wait_port "$p_authz"
remap=()
for h in 127.0.0.1 localhost; do
  remap+=(-remap "$h:3000=127.0.0.1:$p_up" -remap "$h:9191=127.0.0.1:$p_authz" -remap "$h:9192=127.0.0.1:$p_http")
done
"$bin/envoyshim" -envoy-config "$SIDECAR" -listen "127.0.0.1:$p_shim" "${remap[@]}" >/dev/null 2>"$work/shim.err" &
pids+=($!)
wait_port "$p_shim"
token=$("$bin/extauthz" token --config examples/config.yaml --sub alice --ttl 2h)
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr); load average $(cut -d' ' -f1-3 /proc/loadavg); sidecar $SIDECAR"
"$bin/bench" setup --url "http://127.0.0.1:$p_shim/mcp" --addr "127.0.0.1:$p_up" --token "$token" --rps 20 --duration 1s >/dev/null # warm up
for r in $RATES; do
  echo "== $r requests per second (half GET, half POST), $DURATION"
  "$bin/bench" setup --url "http://127.0.0.1:$p_shim/mcp" --addr "127.0.0.1:$p_up" --token "$token" --rps "$r" --duration "$DURATION"
done

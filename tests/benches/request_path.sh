#!/usr/bin/env bash
# The request path against bare handlers: `GET /api/v1/properties/{id}` with a live key,
# measured over loopback with wrk (-t1 -c32), in interleaved rounds, on four servers:
#
#   xf-memory   xf-server on the memory store (its default logging)
#   bare        a bare axum handler: the same JSON from a HashMap, bearer prefix checked
#   bare-contract  the bare handler keeping the API's contract for the read: the key looked up
#               by its digest, the read counted exactly, the remaining-request headers and the
#               request id (the read only: it answers no POST)
#   xf-pg       xf-server on PostgreSQL
#   bare-sqlx   bare axum + sqlx: the same JSON from one SELECT by primary key
#
# (every other round runs them in the reverse order) and prints each one's median requests per
# second over the rounds, the ratios xf/bare, and the peak resident memory (VmHWM) of the xf
# servers. The baselines are the `xf-baseline` binary of the tests crate.
#
# Beside the rates it prints each server's CPU time per request (user and system time of its
# process over a run, from /proc, divided by the requests answered), median over the rounds:
# on a shared machine whose speed varies from minute to minute, that cost moves less than the
# rate does, and it is what a faster request path lowers. For the PostgreSQL servers it adds
# the database's CPU time per request (its client backends serving the run's databases, from
# /proc, so only where PostgreSQL runs on this machine), the other half of what a request
# costs when the database runs beside the server.
#
# Beside it, the same for `POST /api/v1/properties` (the write path): every request creates
# a property with a URL of its own, and on xf carries an `Idempotency-Key` of its own; the
# bare baselines insert the row (into the map, or with one INSERT) and nothing more. Then the
# same write without the key (`POST without a key`), which xf runs without its idempotency
# record.
#
# With BEFORE=<git revision>, xf-server as built at that revision runs in the rounds too, on
# the memory store (`xf-before`), and the report gives today's xf-memory against it: what a
# change to the request path (the metrics it records, say) costs, measured side by side. With
# BEFORE_STORE=postgres as well, xf-before runs on PostgreSQL (a database of its own) and is
# compared with today's xf-pg. BEFORE_BIN=<path> runs a binary built beforehand as xf-before
# instead (an experiment's build, say), without building a revision.
#
# Run with: `bash tests/benches/request_path.sh` (needs wrk: `apt-get install wrk`; and
# PostgreSQL as for the tests: DATABASE_URL, or postgres@127.0.0.1:5432). ROUNDS (default 5)
# and SECONDS_PER_RUN (default 5) size it; WRK_THREADS and WRK_CONNECTIONS default to 1 and 32.
# `BEFORE=62aaa30~1 bash tests/benches/request_path.sh` compares with the build before metrics;
# ONLY="xf-before xf-memory" and GET_ONLY=1 narrow the rounds to those servers and to the read
# (`BEFORE=62aaa30~1 ONLY="xf-before xf-memory" GET_ONLY=1 ROUNDS=11 bash tests/benches/request_path.sh`).
# XF_BENCH_SMOKE=1 makes one round of one second per server on debug builds: it checks that
# the benchmark still runs (.ci/test does so) and gives no figure to quote.
set -euo pipefail
# Paths the caller gave, made absolute before the directory changes.
[ -n "${BEFORE_BIN:-}" ] && BEFORE_BIN="$(realpath "$BEFORE_BIN")"
[ -n "${CARGO_TARGET_DIR:-}" ] && CARGO_TARGET_DIR="$(realpath -m "$CARGO_TARGET_DIR")"
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

smoke="${XF_BENCH_SMOKE:-0}"
[ "$smoke" = 0 ] && smoke=""
rounds="${ROUNDS:-${smoke:+1}}"; rounds="${rounds:-5}"
seconds="${SECONDS_PER_RUN:-${smoke:+1}}"; seconds="${seconds:-5}"
# Cargo's profile, and the directory under target/ it builds into.
profile=release cargo_profile=release
[ -n "$smoke" ] && profile=debug cargo_profile=dev
profile_flag=(--profile "$cargo_profile")
threads="${WRK_THREADS:-1}"
connections="${WRK_CONNECTIONS:-32}"
server_url="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
say() { printf 'request_path: %s\n' "$*" >&2; }

command -v wrk >/dev/null || { say "wrk is missing: apt-get install wrk"; exit 1; }

before="${BEFORE:-}"
target="${CARGO_TARGET_DIR:-$PWD/target}"
logs="$(mktemp -d "${TMPDIR:-/tmp}/request-path.XXXXXX")"
if [ -n "${BEFORE_BIN:-}" ]; then
  cp "$BEFORE_BIN" "$logs/xf-server-before"
  before="$BEFORE_BIN"
elif [ -n "$before" ]; then
  # Built in a worktree of that revision, into a target directory of its own: cargo keys a
  # workspace crate's build by its path within the workspace, so a build of the worktree in
  # today's target directory would leave its older crates there, newer than today's sources,
  # and today's build would take them as fresh.
  say "building xf-server at $before ($profile)"
  tree="$logs/before-tree"
  git worktree add --quiet --detach "$tree" "$before"
  (cd "$tree" && CARGO_TARGET_DIR="$target/before" cargo build --quiet "${profile_flag[@]}" -p xf-server --bin xf-server)
  cp "$target/before/$profile/xf-server" "$logs/xf-server-before"
  git worktree remove --force "$tree"
fi
say "building xf-server and xf-baseline ($profile)"
# In smoke mode the binaries are the test build's (`cargo build --workspace --all-targets`, what
# .ci/test builds first): building these packages alone would unify their features apart from
# the workspace's and compile much of it a second time.
if [ -n "$smoke" ]; then
  cargo build --quiet --workspace --all-targets
else
  cargo build --quiet "${profile_flag[@]}" -p xf-server -p xf-tests --bin xf-server --bin xf-baseline
fi
bin="$target/$profile"

# A fresh database for this run, on the same server as the tests use.
database="xf_bench_request_path"
admin_url="${server_url%/*}/postgres"
psql -q "$admin_url" -c "DROP DATABASE IF EXISTS $database WITH (FORCE)" -c "CREATE DATABASE $database"
db_url="${server_url%/*}/$database"

key="xf_live_bench$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
token="bench-$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')"
secret="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
pids=()
# Stops the servers and drops this run's databases (the write rounds fill them).
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  psql -q "$admin_url" -c "DROP DATABASE IF EXISTS $database WITH (FORCE)" \
    -c "DROP DATABASE IF EXISTS ${database}_before WITH (FORCE)" 2>/dev/null || true
}
trap cleanup EXIT

wait_ready() { # port
  for _ in $(seq 1 200); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  say "nothing listens on $1; logs in $logs"; exit 1
}

start_xf() { # name store [binary]
  local port; port="$(free_port)"
  XF_DEMO_LIVE_KEY="$key" XF_ADMIN_TOKEN="$token" \
    "${3:-$bin/xf-server}" --demo --listen "127.0.0.1:$port" --store "$2" --secret-key "$secret" \
    >"$logs/$1.out" 2>"$logs/$1.err" &
  echo "$port $!"
}

# Lifts the demo organization's limits and registers one property; prints the property's
# JSON (as the API shows it).
prepare() { # port
  python3 - "$1" "$key" "$token" <<'PY'
import json, sys, urllib.request
port, key, token = sys.argv[1:4]
base = f"http://127.0.0.1:{port}"
def call(method, path, body=None, bearer=key):
    request = urllib.request.Request(base + path, method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {bearer}", "Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(request, timeout=10))
org = call("GET", "/api/v1/organization")["data"]["organization"]["id"]
limits = {"readPerHour": 10**12, "writePerHour": 10**12, "orgWriteDaily": 10**12}
call("PATCH", f"/admin/organizations/{org}", {"limits": limits}, bearer=token)
created = call("POST", "/api/v1/properties", {"url": "https://bench.example/", "name": "Bench"})
print(json.dumps(created["data"]["property"]))
PY
}

read -r xf_mem_port xf_mem_pid < <(start_xf xf-memory memory)
read -r xf_pg_port xf_pg_pid < <(start_xf xf-pg "$db_url")
pids+=("$xf_mem_pid" "$xf_pg_pid")
wait_ready "$xf_mem_port"
wait_ready "$xf_pg_port"
mem_property="$(prepare "$xf_mem_port")"
pg_property="$(prepare "$xf_pg_port")"
mem_id="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["id"])' "$mem_property")"
pg_id="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["id"])' "$pg_property")"

bare_port="$(free_port)"
"$bin/xf-baseline" memory "127.0.0.1:$bare_port" "$mem_id" "$mem_property" >"$logs/bare.out" 2>&1 &
bare_pid=$!
pids+=("$bare_pid")
sqlx_port="$(free_port)"
"$bin/xf-baseline" sqlx "127.0.0.1:$sqlx_port" "$db_url" "$pg_id" >"$logs/bare-sqlx.out" 2>&1 &
sqlx_pid=$!
pids+=("$sqlx_pid")
contract_port="$(free_port)"
"$bin/xf-baseline" contract "127.0.0.1:$contract_port" "$mem_id" "$mem_property" "$key" \
  >"$logs/bare-contract.out" 2>&1 &
contract_pid=$!
pids+=("$contract_pid")
wait_ready "$bare_port"
wait_ready "$contract_port"
wait_ready "$sqlx_port"

declare -A urls=(
  [xf-memory]="http://127.0.0.1:$xf_mem_port/api/v1/properties/$mem_id"
  [bare]="http://127.0.0.1:$bare_port/api/v1/properties/$mem_id"
  [bare-contract]="http://127.0.0.1:$contract_port/api/v1/properties/$mem_id"
  [xf-pg]="http://127.0.0.1:$xf_pg_port/api/v1/properties/$pg_id"
  [bare-sqlx]="http://127.0.0.1:$sqlx_port/api/v1/properties/$pg_id"
)
declare -A server_pids=([xf-memory]="$xf_mem_pid" [bare]="$bare_pid"
  [bare-contract]="$contract_pid" [xf-pg]="$xf_pg_pid" [bare-sqlx]="$sqlx_pid")
order=(xf-memory bare bare-contract xf-pg bare-sqlx)
before_store="${BEFORE_STORE:-memory}"
if [ -n "$before" ]; then
  before_target=memory
  if [ "$before_store" = postgres ]; then
    psql -q "$admin_url" -c "DROP DATABASE IF EXISTS ${database}_before WITH (FORCE)" \
      -c "CREATE DATABASE ${database}_before"
    before_target="${server_url%/*}/${database}_before"
  fi
  read -r before_port before_pid < <(start_xf xf-before "$before_target" "$logs/xf-server-before")
  pids+=("$before_pid")
  wait_ready "$before_port"
  before_id="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["id"])' "$(prepare "$before_port")")"
  urls[xf-before]="http://127.0.0.1:$before_port/api/v1/properties/$before_id"
  server_pids[xf-before]="$before_pid"
  order=(xf-before xf-memory bare bare-contract xf-pg bare-sqlx)
fi
if [ -n "${ONLY:-}" ]; then
  read -r -a order <<<"$ONLY"
fi
for name in "${order[@]}"; do
  status="$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $key" "${urls[$name]}")"
  [ "$status" = 200 ] || { say "$name answers $status, not 200"; exit 1; }
done

# The write: a fresh URL and Idempotency-Key per request (unique across rounds and servers:
# each wrk run is given a prefix of its own, as XF_BENCH_RUN), and the same without the key.
cat >"$logs/post.lua" <<LUA
local prefix = os.getenv("XF_BENCH_RUN")
local counter = 0
request = function()
  counter = counter + 1
  local id = prefix .. "-" .. counter
  return wrk.format("POST", nil, {
    ["Authorization"] = "Bearer $key",
    ["Content-Type"] = "application/json",
    ["Idempotency-Key"] = id,
  }, '{"url": "https://site-' .. id .. '.example/"}')
end
LUA
sed '/Idempotency-Key/d' "$logs/post.lua" >"$logs/post-without-key.lua"

results="$logs/results"
: >"$results"
say "$rounds interleaved rounds of ${seconds}s per server, wrk -t$threads -c$connections"
# CPU ticks (user + system) a process has used.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# CPU ticks of each of the database's client backends serving this run's databases, when
# PostgreSQL runs on this machine (none otherwise), one "pid ticks" line each: the database's
# share of a request, which the server's own CPU time leaves out. (Every `postgres` process
# would count autovacuum workers too.)
db_ticks() {
  local pid
  for pid in $(psql -At "$admin_url" -c "SELECT pid FROM pg_stat_activity \
      WHERE datname LIKE '${database}%' AND backend_type = 'client backend'" 2>/dev/null); do
    awk -v pid="$pid" '{print pid, $14 + $15}' "/proc/$pid/stat" 2>/dev/null || true
  done
}
# The ticks the backends used between two snapshots: all of a backend's that started in
# between, none of one that closed in between (its ticks left /proc with it).
db_used() { # snapshot-before snapshot-after
  awk 'NR == FNR { before[$1] = $2; next } { used += $2 - before[$1] }
       END { print used + 0 }' <(echo "$1") <(echo "$2")
}
per_request() { # ticks-before ticks-after requests
  python3 -c 'import sys; b, a, n, hz = map(float, sys.argv[1:]); print(f"{(a - b) / hz * 1e6 / max(n, 1):.2f}")' \
    "$1" "$2" "$3" "$(getconf CLK_TCK)"
}
# One wrk run against a server: appends "<label> <req/s> <CPU µs per request> <database CPU
# µs per request>" to the results.
runs=0
measure() { # label pid wrk-arguments...
  local label="$1" pid="$2" before after db_before db_after out rps requests cpu db
  shift 2
  runs=$((runs + 1))
  before="$(ticks "$pid")"
  db_before="$(db_ticks)"
  out="$(XF_BENCH_RUN="$$-$runs" wrk -t"$threads" -c"$connections" -d"${seconds}s" "$@")"
  after="$(ticks "$pid")"
  db_after="$(db_ticks)"
  # Every answer must be the success the run measures: a 404 or a 429 is cheaper than a read.
  if grep -q 'Non-2xx' <<<"$out"; then
    say "round $round: $label: $(grep 'Non-2xx' <<<"$out" | xargs)"
    exit 1
  fi
  rps="$(awk '/Requests\/sec:/ {print $2}' <<<"$out")"
  requests="$(awk '/requests in/ {print $1}' <<<"$out")"
  cpu="$(per_request "$before" "$after" "$requests")"
  db="$(per_request 0 "$(db_used "$db_before" "$db_after")" "$requests")"
  echo "$label $rps $cpu $db" >>"$results"
  say "round $round: $label $rps req/s, $cpu µs of CPU per request (database: $db µs)"
}
for round in $(seq 1 "$rounds"); do
  # Every other round runs the servers in the reverse order: none always runs first.
  this_round=("${order[@]}")
  if [ $((round % 2)) -eq 0 ]; then
    this_round=()
    for ((i = ${#order[@]} - 1; i >= 0; i--)); do this_round+=("${order[$i]}"); done
  fi
  for name in "${this_round[@]}"; do
    measure "$name" "${server_pids[$name]}" -H "Authorization: Bearer $key" "${urls[$name]}"
    if [ -z "${GET_ONLY:-}" ] && [ "$name" != bare-contract ]; then
      measure "$name-POST" "${server_pids[$name]}" -s "$logs/post.lua" "${urls[$name]%/*}"
      measure "$name-POST-without-key" "${server_pids[$name]}" -s "$logs/post-without-key.lua" \
        "${urls[$name]%/*}"
    fi
  done
done

peak() { awk '/VmHWM/ {printf "%.1f MiB", $2/1024}' "/proc/$1/status"; }
today="xf-memory"
[ "$before_store" = postgres ] && today="xf-pg"
python3 - "$results" "$(peak "$xf_mem_pid")" "$(peak "$xf_pg_pid")" "$before" "$today" <<'PY'
import statistics, sys
from collections import defaultdict
rates, costs, db_costs = defaultdict(list), defaultdict(list), defaultdict(list)
for line in open(sys.argv[1]):
    name, rps, cpu, db = line.split()
    rates[name].append(float(rps))
    costs[name].append(float(cpu))
    db_costs[name].append(float(db))
rate = {name: statistics.median(values) for name, values in rates.items()}
cost = {name: statistics.median(values) for name, values in costs.items()}
db_cost = {name: statistics.median(values) for name, values in db_costs.items()}
peaks = {"xf-memory": sys.argv[2], "xf-pg": sys.argv[3]}
print("| server | request | median req/s | runs | ratio | CPU per request | CPU ratio | database CPU per request |")
print("|---|---|---|---|---|---|---|---|")
requests = [("", "GET /properties/{id}"), ("-POST", "POST /properties"),
            ("-POST-without-key", "POST /properties without a key")]
for suffix, request in requests:
    for name, bare in [("xf-memory", "bare"), ("bare", None), ("bare-contract", "bare"),
                       ("xf-pg", "bare-sqlx"), ("bare-sqlx", None)]:
        key, base = name + suffix, (bare + suffix if bare else None)
        if key not in rate or (base and base not in rate):
            continue
        runs = ", ".join(f"{v:,.0f}" for v in rates[key])
        ratio = f"{rate[key] / rate[base]:.2f} of {bare}" if base else ""
        cpu_ratio = f"{cost[key] / cost[base]:.2f}x {bare}" if base else ""
        db = f"{db_cost[key]:.1f} µs" if name in ("xf-pg", "bare-sqlx") else ""
        print(f"| {name} | {request} | {rate[key]:,.0f} | {runs} | {ratio} | {cost[key]:.1f} µs | {cpu_ratio} | {db} |")
print(f"peak RSS of the xf servers: memory {peaks['xf-memory']}, PostgreSQL {peaks['xf-pg']}")
if "xf-memory" in rate and "bare-contract" in rate:
    # What xf adds to the least that keeps the contract: its own overhead, the log line included.
    print(f"xf-memory GET against bare-contract: {rate['xf-memory'] / rate['bare-contract']:.2f} "
          f"of its requests a second, {cost['xf-memory'] / cost['bare-contract']:.2f}x its CPU per request")
if "xf-before" in rate:
    today = sys.argv[5]
    print(f"\n{today} today against xf-server at {sys.argv[4]} (xf-before), the same store:\n")
    print("| request | xf-before req/s | today req/s | rate ratio | CPU per request, before / today | CPU ratio | CPU ratio, median of rounds |")
    print("|---|---|---|---|---|---|---|")
    for suffix, request in requests:
        old, new = "xf-before" + suffix, today + suffix
        if old not in rate:
            continue
        # The two run one after the other in each round: a round's ratio is the least touched
        # by the machine's drift.
        paired = statistics.median(n / o for o, n in zip(costs[old], costs[new]))
        print(f"| {request} | {rate[old]:,.0f} | {rate[new]:,.0f} | {rate[new] / rate[old]:.3f} "
              f"| {cost[old]:.2f} / {cost[new]:.2f} µs | {cost[new] / cost[old]:.3f} | {paired:.3f} |")
PY

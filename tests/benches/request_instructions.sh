#!/usr/bin/env bash
# Instructions per request: `GET /api/v1/properties/{id}` with a live key, on xf-server over
# the memory store, counted by callgrind (`valgrind --tool=callgrind`) across the server's
# threads. Counted instructions do not drift with the machine's load as requests per second
# do, so two builds compare to a few tenths of a percent: the cost of a change to the request
# path, where `request_path.sh` only bounds it within its noise.
#
# Each binary given is started under callgrind with instrumentation off, answers 200 requests
# to warm up, then instrumentation is switched on for REQUESTS (default 4,000) requests sent
# one after the other on one keep-alive connection, and the total is divided by their number.
#
# Run with: `bash tests/benches/request_instructions.sh [BINARY...]` (default: today's
# release build of xf-server). BEFORE=<git revision> builds xf-server at that revision in a
# worktree and counts it first (`BEFORE=62aaa30~1 bash tests/benches/request_instructions.sh`).
# Needs valgrind (`apt-get install valgrind`). XF_BENCH_SMOKE=1 counts 50 requests on a debug
# build: it checks that the benchmark still runs (.ci/test does so), no figure to quote.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

smoke="${XF_BENCH_SMOKE:-0}"
[ "$smoke" = 0 ] && smoke=""
requests="${REQUESTS:-${smoke:+50}}"; requests="${requests:-4000}"
# Cargo's profile, and the directory under target/ it builds into.
profile=release cargo_profile=release
[ -n "$smoke" ] && profile=debug cargo_profile=dev
profile_flag=(--profile "$cargo_profile")
say() { printf 'request_instructions: %s\n' "$*" >&2; }
command -v valgrind >/dev/null || { say "valgrind is missing: apt-get install valgrind"; exit 1; }

target="${CARGO_TARGET_DIR:-$PWD/target}"
work="$(mktemp -d "${TMPDIR:-/tmp}/request-instructions.XXXXXX")"
binaries=("$@")
if [ ${#binaries[@]} -eq 0 ]; then
  if [ -n "${BEFORE:-}" ]; then
    say "building xf-server at $BEFORE ($profile)"
    git worktree add --quiet --detach "$work/tree" "$BEFORE"
    (cd "$work/tree" && CARGO_TARGET_DIR="$target" cargo build --quiet "${profile_flag[@]}" -p xf-server --bin xf-server)
    cp "$target/$profile/xf-server" "$work/xf-server-before"
    git worktree remove --force "$work/tree"
    binaries+=("$work/xf-server-before")
  fi
  say "building xf-server ($profile)"
  cargo build --quiet "${profile_flag[@]}" -p xf-server --bin xf-server
  binaries+=("$target/$profile/xf-server")
fi

key="xf_live_bench$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
token="bench-$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

for binary in "${binaries[@]}"; do
  port="$(free_port)"
  out="$work/callgrind.$port"
  XF_DEMO_LIVE_KEY="$key" XF_ADMIN_TOKEN="$token" valgrind --tool=callgrind --instr-atstart=no \
    --callgrind-out-file="$out" "$binary" --demo --listen "127.0.0.1:$port" \
    >"$work/server.$port.out" 2>"$work/server.$port.err" &
  pid=$!
  python3 - "$port" "$key" "$token" "$requests" "$pid" <<'PY'
import http.client, json, subprocess, sys, time
port, key, token, requests, pid = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
for _ in range(600):
    try:
        http.client.HTTPConnection("127.0.0.1", port, timeout=5).request("GET", "/livez")
        break
    except OSError:
        time.sleep(0.1)
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
def call(method, path, body=None, bearer=key):
    conn.request(method, path, body=None if body is None else json.dumps(body),
                 headers={"Authorization": f"Bearer {bearer}", "Content-Type": "application/json"})
    answer = conn.getresponse()
    data = answer.read()
    assert answer.status < 300, (answer.status, data)
    return json.loads(data)
org = call("GET", "/api/v1/organization")["data"]["organization"]["id"]
limits = {"readPerHour": 10**12, "writePerHour": 10**12, "orgWriteDaily": 10**12}
call("PATCH", f"/admin/organizations/{org}", {"limits": limits}, bearer=token)
prop = call("POST", "/api/v1/properties", {"url": "https://bench.example/"})["data"]["property"]["id"]
path = f"/api/v1/properties/{prop}"
for _ in range(200):
    call("GET", path)
subprocess.run(["callgrind_control", "-i", "on", pid], check=True, capture_output=True)
for _ in range(requests):
    call("GET", path)
subprocess.run(["callgrind_control", "-i", "off", pid], check=True, capture_output=True)
PY
  kill -INT "$pid"
  wait "$pid" 2>/dev/null || true
  total=0
  for file in "$out"*; do
    count="$(awk '/^totals:/ {print $2}' "$file" | tail -1)"
    total=$((total + ${count:-0}))
  done
  [ "$total" -gt 0 ] || { say "callgrind counted nothing for $binary; logs in $work"; exit 1; }
  printf '%s: %s instructions per request (%s requests)\n' \
    "$binary" "$((total / requests))" "$requests"
done

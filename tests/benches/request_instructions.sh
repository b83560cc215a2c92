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
# The bare handlers of `request_path.sh` (`xf-baseline memory`, then `xf-baseline contract`,
# which keeps the API's contract for the read) are counted the same way, last, and each count
# is followed by where it goes: instructions per request by crate (mimalloc
# and libc as their own), the largest first, with CRATES (default 12) lines. The callgrind
# files stay in a temporary directory, named at the end, for `callgrind_annotate`.
#
# valgrind hides SHA-NI from the program, so `sha2` runs its portable code under callgrind
# (about 7,000 instructions for a key's digest); on a CPU with SHA-NI (`grep sha_ni
# /proc/cpuinfo`) the same digest takes a few hundred.
#
# Run with: `bash tests/benches/request_instructions.sh [BINARY...]` (default: today's
# release build of xf-server). BEFORE=<git revision> builds xf-server at that revision in a
# worktree and counts it first (`BEFORE=62aaa30~1 bash tests/benches/request_instructions.sh`).
# BARE=0 leaves the bare handlers out. Needs valgrind (`apt-get install valgrind`).
# XF_BENCH_SMOKE=1 counts 50 requests on a debug build: it checks that the benchmark still
# runs (.ci/test does so), no figure to quote.
set -euo pipefail
# In smoke mode the binaries are the test build's (`cargo build --workspace --all-targets`, what
# .ci/test builds first): building xf-server or xf-baseline alone would unify their features apart from
# the workspace's and compile much of it a second time.
build() {
  if [ -n "$smoke" ]; then
    cargo build --quiet --workspace --all-targets
  else
    cargo build --quiet "${profile_flag[@]}" "$@"
  fi
}
# A target directory the caller gave, made absolute before the directory changes.
[ -n "${CARGO_TARGET_DIR:-}" ] && CARGO_TARGET_DIR="$(realpath -m "$CARGO_TARGET_DIR")"
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
    # A target directory of its own, as in request_path.sh: built in today's, the worktree's
    # crates would pass for today's.
    (cd "$work/tree" && CARGO_TARGET_DIR="$target/before" cargo build --quiet "${profile_flag[@]}" -p xf-server --bin xf-server)
    cp "$target/before/$profile/xf-server" "$work/xf-server-before"
    git worktree remove --force "$work/tree"
    binaries+=("$work/xf-server-before")
  fi
  say "building xf-server ($profile)"
  build -p xf-server --bin xf-server
  binaries+=("$target/$profile/xf-server")
fi
bare=""
if [ "${BARE:-1}" != 0 ]; then
  say "building xf-baseline ($profile)"
  build -p xf-tests --bin xf-baseline
  bare="$target/$profile/xf-baseline"
fi

key="xf_live_bench$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
token="bench-$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Instructions per request by crate, from a callgrind file: the largest CRATES.
by_crate() { # callgrind-file requests
  callgrind_annotate --inclusive=no --threshold=100 --auto=no "$1" 2>/dev/null | python3 -c '
import re, sys
requests, shown = int(sys.argv[1]), int(sys.argv[2])
groups = {}
for line in sys.stdin:
    m = re.match(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(\S.*)$", line)
    if not m or "PROGRAM TOTALS" in line:
        continue
    where = m.group(2).split(":", 1)[1] if m.group(2).startswith(("???:", "./", "/")) else m.group(2)
    name = where.lstrip("<")
    if re.search(r"\[.*/(libc|ld-linux)[^/]*\]$", name):
        crate = "libc"
    elif name.startswith(("mi_", "_mi_")) or re.match(r"__rustc::__rust_(alloc|dealloc|realloc)", name):
        crate = "mimalloc"
    else:
        crate = re.split(r"::|<| as ", name)[0].strip() or "?"
    groups[crate] = groups.get(crate, 0) + int(m.group(1).replace(",", ""))
for crate, count in sorted(groups.items(), key=lambda kv: -kv[1])[:shown]:
    print(f"  {count / requests:8.0f}  {crate}")
' "$2" "${CRATES:-12}"
}

# Counts one server: `xf` (xf-server's demo organization, limits lifted, one property),
# `bare` or `contract` (the bare handlers, serving the property they are started with).
count() { # kind binary
  local kind="$1" binary="$2" port pid out total count
  port="$(free_port)"
  out="$work/callgrind.$port"
  local server=("$binary" --demo --listen "127.0.0.1:$port")
  local property="prop_01a22672858872cfad7eee3d6353b887"
  local json="{\"id\": \"$property\", \"name\": \"https://bench.example/\",
    \"url\": \"https://bench.example/\", \"verified\": false,
    \"createdAt\": \"2026-11-29T08:36:09.224Z\"}"
  case "$kind" in
    bare) server=("$binary" memory "127.0.0.1:$port" "$property" "$json") ;;
    contract) server=("$binary" contract "127.0.0.1:$port" "$property" "$json" "$key") ;;
  esac
  XF_DEMO_LIVE_KEY="$key" XF_ADMIN_TOKEN="$token" valgrind --tool=callgrind --instr-atstart=no \
    --callgrind-out-file="$out" "${server[@]}" \
    >"$work/server.$port.out" 2>"$work/server.$port.err" &
  pid=$!
  python3 - "$kind" "$port" "$key" "$token" "$requests" "$pid" "$property" <<'PY'
import http.client, json, socket, subprocess, sys, time
kind, port, key, token, requests, pid, path = sys.argv[1:8]
requests = int(requests)
for _ in range(600):
    try:
        socket.create_connection(("127.0.0.1", int(port)), timeout=5).close()
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
if kind == "xf":
    org = call("GET", "/api/v1/organization")["data"]["organization"]["id"]
    limits = {"readPerHour": 10**12, "writePerHour": 10**12, "orgWriteDaily": 10**12}
    call("PATCH", f"/admin/organizations/{org}", {"limits": limits}, bearer=token)
    body = {"url": "https://bench.example/"}
    path = call("POST", "/api/v1/properties", body)["data"]["property"]["id"]
path = f"/api/v1/properties/{path}"
for _ in range(200):
    call("GET", path)
subprocess.run(["callgrind_control", "-i", "on", pid], check=True, capture_output=True)
for _ in range(requests):
    call("GET", path)
subprocess.run(["callgrind_control", "-i", "off", pid], check=True, capture_output=True)
# The counts so far, in a file of their own (`<out>.1`); the bare handler does not stop on
# a signal, so this is where its counts are.
subprocess.run(["callgrind_control", "-d", pid], check=True, capture_output=True)
PY
  kill -KILL "$pid"
  wait "$pid" 2>/dev/null || true
  total="$(awk '/^totals:/ {print $2}' "$out.1" | tail -1)"
  [ "${total:-0}" -gt 0 ] || { say "callgrind counted nothing for $binary; logs in $work"; exit 1; }
  local label="$binary"
  [ "$kind" = xf ] || label="$binary $kind"
  printf '%s: %s instructions per request (%s requests)\n' \
    "$label" "$((total / requests))" "$requests"
  by_crate "$out.1" "$requests"
}

for binary in "${binaries[@]}"; do
  count xf "$binary"
done
if [ -n "$bare" ]; then
  count bare "$bare"
  count contract "$bare"
fi
say "callgrind files (for callgrind_annotate) in $work"

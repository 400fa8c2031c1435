#!/usr/bin/env bash
# tests/scripts/bench_test.sh — the benchmarks at --quick sizes on servers of
# their own: they must end within a cap against a hang (how long they take
# depends on the machine's load, so that is said, not judged: the sizes
# --quick picks are checked by the unit tests of make_plan), exit 0, print JSON
# lines that parse and carry the common fields (impl, workload, params, ops,
# rate, latency percentiles), with zero
# mutual-exclusion violations and zero znodes left behind by W3, and the
# servers' count of requests and writes. The usage errors exit 2. Also checks
# the plots and files that --out writes. Then two short runs: the --no-lock
# control, which the exclusion checker must catch (overlaps and lost
# updates), W1 at +2 ms round trip with Curator's InterProcessMutex, and W6
# and W7 with Curator's read/write lock, semaphore and semaphore mutex beside
# ours, W9 with Curator's LeaderLatch, and W10 with Curator's
# DistributedAtomicLong and CuratorCache.
# Environment: ZKR_BUILD_DIR; ZKR_ENSEMBLE_SCRIPT: the runs go to three
# servers of their own that it starts; or else ZK_CONNECT, the servers to
# use (without either: skipped, exit 77).
set -euo pipefail
say() { printf 'bench_test: %s\n' "$*" >&2; }

if [[ -z ${ZK_CONNECT:-} && -z ${ZKR_ENSEMBLE_SCRIPT:-} ]]; then
  say "skipped: neither ZK_CONNECT nor ZKR_ENSEMBLE_SCRIPT is set"
  exit 77  # SKIP_RETURN_CODE (tests/CMakeLists.txt): ctest shows a skip, not a pass
fi
build=${ZKR_BUILD_DIR:?}
# The zkr tool once it has the bench verb, else the zkr-bench program.
if [[ -x $build/tools/zkr ]] && "$build/tools/zkr" bench --help >/dev/null 2>&1; then
  bench=("$build/tools/zkr" bench)
elif [[ -x $build/benchmarks/zkr-bench ]]; then
  bench=("$build/benchmarks/zkr-bench")
else
  say "neither $build/tools/zkr nor $build/benchmarks/zkr-bench is built"
  exit 1
fi
command -v jq >/dev/null || { say "jq is needed (apt-get install jq)"; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/bench-test.XXXXXX")
# shellcheck source=tests/scripts/own_servers.sh
source "$(dirname "$0")/own_servers.sh"
own_servers_start "$work" bench_test
failures=0
fail() { say "FAILED: $*"; failures=$((failures + 1)); }

# Usage errors: exit 2, a message, no run.
for bad in "--bogus" "--workloads W99" "--max-keys lots"; do
  rc=0
  # shellcheck disable=SC2086  # split on purpose
  "${bench[@]}" $bad >"$work/usage.out" 2>&1 || rc=$?
  [[ $rc -eq 2 ]] || fail "'$bad' exited $rc, wanted 2"
  [[ -s $work/usage.out ]] || fail "'$bad' said nothing"
done

# A unique root per run, so that a concurrent test cannot disturb it.
root="/zkr-bench-test-$$"
say "${bench[*]} --quick --json --out $work/out --root $root"
start=$SECONDS
rc=0
timeout 300 "${bench[@]}" --quick --json --out "$work/out" --root "$root" \
  >"$work/lines.jsonl" 2>"$work/stderr.txt" || rc=$?
if [[ $rc -ne 0 ]]; then
  fail "exit $rc"
  cat "$work/stderr.txt" >&2
fi
measured=$(jq -s '[.[].seconds] | add | floor' "$work/lines.jsonl" 2>/dev/null || echo unknown)

# Every stdout line is one JSON object with the common fields.
lines=$(wc -l <"$work/lines.jsonl")
((lines >= 10)) || fail "only $lines JSON lines"
if ! jq -e -s 'length > 0 and all(.[];
      (.impl == "zkr" or .impl == "floor" or .impl == "floor-event") and (.workload | type == "string") and
      (.params | type == "object") and (.ops | type == "number") and
      (.seconds | type == "number") and (.ops_per_sec | type == "number") and
      has("p50_ms") and has("p99_ms") and has("max_ms"))' "$work/lines.jsonl" >/dev/null; then
  fail "a JSON line does not parse or lacks a common field"
  head -c 2000 "$work/lines.jsonl" >&2
fi
# Each workload and the floor are there.
for w in W1 W2 W3 W4 W4-list W4-clean W5 W6 W7 W8 W9 W10 W10-cache; do
  jq -e -s --arg w "$w" 'any(.[]; .impl == "zkr" and .workload == $w)' "$work/lines.jsonl" >/dev/null ||
    fail "no zkr $w line"
done
jq -e -s 'any(.[]; .impl == "floor" and .ops > 0)' "$work/lines.jsonl" >/dev/null || fail "no floor line"
# Correctness: no violations, no leftovers, ratios to the floor present.
# W8's five sides (async mutex and async semaphore, each with callbacks and
# with coroutines; blocking): every waiter granted once, one at a time.
jq -e -s '[.[] | select(.workload == "W8") | (.violations == 0 and .failures == 0 and .granted_once == .params.waiters)] | length == 5 and all' \
  "$work/lines.jsonl" >/dev/null || fail "W8: a waiter not granted once, or a violation"
jq -e -s '[.[] | select(.workload == "W2" or .workload == "W5" or .workload == "W6") | .violations] | length > 0 and all(. == 0)' \
  "$work/lines.jsonl" >/dev/null || fail "mutual-exclusion violations (or no count of them)"
# W2 runs the floor's lock, the unsafe probe (the floor granting on the
# event alone) and ours; the checker saw every hold of each: one per
# acquisition, the counter at the count; each has its hand-off latency, and
# the probe its ratio to the floor.
jq -e -s '[.[] | select(.workload == "W2")] | length == 3 and
    (map(.impl) | sort) == ["floor", "floor-event", "zkr"] and
    all(.[]; .counter == .ops and .ops > 0 and (.handoff_p50_ms | type == "number") and
             (.handoff_p99_ms | type == "number")) and
    any(.[]; .impl == "floor-event" and (.x_floor_rate | type == "number"))' \
  "$work/lines.jsonl" >/dev/null || fail "W2: not the floor, the probe and zkr, or a counter that is not its acquisitions, or no hand-off latency"
# W7: the semaphore never had more holders than its 4 leases, each mutex one;
# the two mutexes say what an acquisition costs the servers.
jq -e -s '[.[] | select(.workload == "W7")] | length == 5 and
    (map(.most_holders_at_once) | . == [(.[0] | select(. <= 4)), 1, 1, 1, 1]) and
    (.[1:] | all(.writes_per_op | type == "number"))' \
  "$work/lines.jsonl" >/dev/null || fail "W7: a bound broken, a record missing, or no cost per acquisition"
# W9: the leader's close timed to the next term, every term judged (one
# leader at a time, rising epochs), and the servers' writes per election;
# the leader's link cut, the next term no sooner than its session could
# expire (a standby that led at once would mean the cut did not count).
jq -e -s '[.[] | select(.workload == "W9" and .params.failure == "close")] | length == 1 and
    all(.[]; .ops > 0 and .violations == 0 and .terms == .ops + 1 and .p50_ms > 0 and
             (.writes_per_op | type == "number"))' \
  "$work/lines.jsonl" >/dev/null || fail "W9: no failover timed, a violation, or no writes per election"
jq -e -s '[.[] | select(.workload == "W9" and (.params.session_timeout_ms | type == "number"))] | length == 1 and
    all(.[]; .ops > 0 and .violations == 0 and .p50_x_session_timeout >= 0.5 and
             (.writes_per_op | type == "number"))' \
  "$work/lines.jsonl" >/dev/null || fail "W9 kill: no failover timed, one before the session could expire, or no cost"
# W10: 8 sessions' adds to one counter, the servers' final value equal to the
# adds that succeeded (an indeterminate one may count or not), the version
# conflicts per add and the servers' writes per add.
jq -e -s '[.[] | select(.workload == "W10")] | length == 1 and
    all(.[]; .ops > 0 and .params.workers == 8 and .final_value >= .ops and
             .final_value <= .ops + .indeterminate and .conflicts_per_op >= 0 and
             .p50_ms > 0 and (.writes_per_op | type == "number"))' \
  "$work/lines.jsonl" >/dev/null || fail "W10: no add timed, a final value unlike the adds, or no cost per add"
# W10's cache: each round timed to the cache holding the final members, its
# view then equal to the servers' tree, and what it sent per change.
jq -e -s '[.[] | select(.workload == "W10-cache")] | length == 1 and
    all(.[]; .ops == 2 and .params.changes == 100 and .unequal_to_servers == 0 and .p50_ms >= 0 and
             (.cache_requests_per_change | type == "number"))' \
  "$work/lines.jsonl" >/dev/null || fail "W10-cache: a round untimed, a view unlike the servers', or no cost per change"
jq -e -s '[.[] | select(.workload == "W3") | .leftover_znodes] | length == 3 and all(. == 0)' \
  "$work/lines.jsonl" >/dev/null || fail "W3 left znodes behind (or did not say)"
jq -e -s '[.[] | select(.workload == "W3") | .znodes_after_settle] | all(type == "number")' \
  "$work/lines.jsonl" >/dev/null || fail "W3 has no znode counts from mntr"
jq -e -s 'any(.[]; .workload == "W1" and .impl == "zkr" and (.x_floor_rate | type == "number"))' \
  "$work/lines.jsonl" >/dev/null || fail "W1 has no ratio to the floor"
jq -e -s '[.[] | select(.workload == "W4-clean") | .left_below_root] | all(. == 0)' \
  "$work/lines.jsonl" >/dev/null || fail "W4's sweep left znodes"

# The servers' count of what each run cost: requests and writes per
# operation, for the floor and every workload of the lock (the ensemble here
# is local, so mntr answers); the floor's protocol is create, list, delete.
for w in W1 W2 W3 W5; do
  jq -e -s --arg w "$w" '[.[] | select(.workload == $w)] | length > 0 and
      all(.[]; (.requests_per_op | type == "number") and (.writes_per_op | type == "number"))' \
    "$work/lines.jsonl" >/dev/null || fail "$w has no requests or writes per operation"
done
grep -F "is left out:" "$work/stderr.txt" >&2 || true
jq -e -s 'any(.[]; .impl == "floor" and .writes_per_op >= 1.9 and .writes_per_op <= 2.2)' \
  "$work/lines.jsonl" >/dev/null || fail "the floor's writes per cycle are not 2 (create, delete)"
grep -q '^Durability: ' "$work/stderr.txt" || fail "the run did not say whether the servers fsync"

# What --out wrote.
for f in results.jsonl results.txt targets.json w4.png w5.png; do
  [[ -s $work/out/$f ]] || fail "--out wrote no $f"
done
jq -e 'length > 0' "$work/out/targets.json" >/dev/null || fail "targets.json does not parse"
grep -q 'Targets and checks' "$work/stderr.txt" || fail "no table of targets on stderr"

# The control: the same W2 and W5 with no lock must be caught, by overlaps
# and by lost updates both (not merely by tokens, which are all 0 without a
# lock), and exit 1.
say "${bench[*]} --quick --no-lock --workloads W2,W5"
rc=0
timeout 180 "${bench[@]}" --quick --json --no-lock --workloads W2,W5 --root "$root-nolock" \
  >"$work/nolock.jsonl" 2>"$work/nolock.txt" || rc=$?
[[ $rc -eq 1 ]] || fail "--no-lock exited $rc, wanted 1 (a failed check)"
for w in W2 W5; do
  jq -e -s --arg w "$w" '[.[] | select(.workload == $w)] | length > 0 and
      any(.[]; .overlaps > 0) and any(.[]; .lost_updates > 0)' "$work/nolock.jsonl" >/dev/null ||
    fail "--no-lock: the checker missed the overlaps or the lost updates of $w"
done
grep -q 'MUTUAL EXCLUSION VIOLATED' "$work/nolock.txt" || fail "--no-lock printed no checker report"
# Added round-trip latency through the delay proxies: the floor and W1 again,
# at +2 ms, each record saying so, and slower than without it (three round
# trips a cycle for the floor: at least 6 ms). Curator's InterProcessMutex
# runs too (javac and the jars are part of scripts/setup), at both RTTs.
say "${bench[*]} --quick --workloads W1 --rtt 0,2 --peers curator"
rc=0
timeout 180 "${bench[@]}" --quick --json --workloads W1 --rtt 0,2 --peers curator --root "$root-rtt" \
  >"$work/rtt.jsonl" 2>"$work/rtt.txt" || rc=$?
[[ $rc -eq 0 ]] || { fail "--rtt 0,2 --peers curator exited $rc"; tail -n 20 "$work/rtt.txt" >&2; }
jq -e -s '[.[] | select(.impl == "curator" and .workload == "W1")] | length == 2 and
    all(.[]; .ops > 0 and (.x_floor_rate | type == "number") and (.writes_per_op | type == "number"))' \
  "$work/rtt.jsonl" >/dev/null || fail "--peers curator: no Curator W1 records with ratios and costs"
jq -e -s '[.[] | select((.impl == "zkr" or .impl == "floor") and .workload == "W1" and .added_rtt_ms == 2)] | length == 2 and
    all(.[]; .ops > 0)' "$work/rtt.jsonl" >/dev/null ||
  fail "--rtt: no floor and zkr W1 records at +2 ms"
jq -e -s 'any(.[]; .impl == "floor" and .added_rtt_ms == 2 and .p50_ms >= 6)' "$work/rtt.jsonl" >/dev/null ||
  fail "--rtt: the floor's cycle at +2 ms took under three added round trips (is the delay applied?)"
# W6, W7, W9 and W10 with Curator's recipes in the same run (one javac, one
# JVM): Curator's holds judged by the same checker (its read/write lock's
# every write counted, no violation; its semaphore within its 4 leases, its
# semaphore mutex one holder at a time), its cost per acquisition, and each of
# ours as a ratio to it; its LeaderLatch's failovers timed, one leader at a
# time.
say "${bench[*]} --quick --workloads W6,W7,W9,W10 --rtt 0 --peers curator"
rc=0
timeout 420 "${bench[@]}" --quick --json --workloads W6,W7,W9,W10 --rtt 0 --peers curator \
  --root "$root-curator" >"$work/curator.jsonl" 2>"$work/curator.txt" || rc=$?
[[ $rc -eq 0 ]] || { fail "W6,W7,W9,W10 --peers curator exited $rc"; tail -n 20 "$work/curator.txt" >&2; }
jq -e -s '[.[] | select(.impl == "curator" and .workload == "W6")] | length == 1 and
    all(.[]; .ops > 0 and .violations == 0 and .counter == .writes and .reads > 0 and
             (.most_readers_at_once | type == "number") and (.writer_wait_p99_ms | type == "number") and
             (.writes_per_op | type == "number"))' \
  "$work/curator.jsonl" >/dev/null || fail "--peers curator: no Curator W6 record judged clean, with its cost"
jq -e -s '[.[] | select(.impl == "curator" and .workload == "W7")] | length == 3 and
    (map(.most_holders_at_once) | . == [(.[0] | select(. <= 4)), 1, 1]) and
    all(.[]; .ops > 0 and (.writes_per_op | type == "number"))' \
  "$work/curator.jsonl" >/dev/null || fail "--peers curator: Curator's W7 records missing, a bound broken, or no cost"
jq -e -s '[.[] | select(.impl == "zkr" and (.workload == "W6" or .workload == "W7"))] | length == 6 and
    all(.[]; .x_curator_rate | type == "number")' \
  "$work/curator.jsonl" >/dev/null || fail "--peers curator: W6 or W7 of ours without its ratio to Curator's"
jq -e -s '[.[] | select(.workload == "W9")] | length == 4 and
    (map(.impl) == ["curator", "zkr", "curator", "zkr"]) and
    all(.[]; .ops > 0 and .violations == 0 and .p50_ms > 0 and (.writes_per_op | type == "number")) and
    (.[1].x_curator_p50 | type == "number") and (.[2:] | all(.p50_x_session_timeout >= 0.5))' \
  "$work/curator.jsonl" >/dev/null || fail "--peers curator: W9 of Curator's LeaderLatch or ours missing, unjudged or without cost"
# W10 with Curator's DistributedAtomicLong (its adds counted, the final value
# equal to them) and CuratorCache (timed to the final members, equal to the
# servers' tree).
jq -e -s '[.[] | select(.workload == "W10")] | length == 2 and
    (map(.impl) == ["curator", "zkr"]) and
    all(.[]; .ops > 0 and .final_value >= .ops and .conflicts_per_op >= 0 and
             (.writes_per_op | type == "number")) and
    (.[0].final_value == .[0].ops) and (.[1].x_curator_rate | type == "number")' \
  "$work/curator.jsonl" >/dev/null || fail "--peers curator: W10 of Curator's counter or ours missing, miscounted or without cost"
jq -e -s '[.[] | select(.workload == "W10-cache")] | length == 2 and
    (map(.impl) == ["curator", "zkr"]) and
    all(.[]; .ops == 2 and .unequal_to_servers == 0 and (.cache_requests_per_change | type == "number")) and
    ((.[1].x_curator_p50 | type == "number") or .[0].p50_ms == 0)' \
  "$work/curator.jsonl" >/dev/null || fail "--peers curator: W10 of Curator's CuratorCache or ours missing or unlike the servers' tree"
# What a run leaves on its root is only what a sweep removes (the library's
# marked directories), so a second run on the same root starts at once: the
# counters' data nodes are deleted, and their parents and the cache group's
# are marked containers, not empty persistent nodes the check must refuse.
rc=0
timeout 120 "${bench[@]}" --quick --json --workloads W10 --rtt 0 --root "$root-curator" \
  >"$work/again.jsonl" 2>"$work/again.txt" || rc=$?
[[ $rc -eq 0 ]] || { fail "W10 again on the same root exited $rc"; tail -n 20 "$work/again.txt" >&2; }
took=$((SECONDS - start))

if [[ $failures -ne 0 ]]; then
  say "$failures failure(s); stderr of the run:"
  tail -n 60 "$work/stderr.txt" >&2
  exit 1
fi
say "ok: $lines JSON lines, ${measured}s measured; the runs took ${took}s"

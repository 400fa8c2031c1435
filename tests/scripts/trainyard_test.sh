#!/usr/bin/env bash
# tests/scripts/trainyard_test.sh — small train yards on servers of their own:
#   with locks     every invariant must hold (exit 0), the dispatcher's too;
#   --chaos        the same through a leader kill, a session expiry and two
#                  kills of the leading dispatcher, each failover reported (needs
#                  ZKR_ENSEMBLE_SCRIPT: without it the test ends skipped, exit
#                  77, once the other runs passed);
#   --no-locks     the invariants must be reported broken (exit 1): this is
#                  what the locks are for, so a clean run here is a failure of
#                  the demonstration. The dispatcher's still hold.
# Environment: ZKR_BUILD_DIR; ZKR_ENSEMBLE_SCRIPT: the yards run on three
# servers of their own that it starts (the chaos run kills their leader, which
# no other test should see); or else ZK_CONNECT, the servers to use (without
# either: skipped, exit 77).
# 77 is the SKIP_RETURN_CODE of tests/CMakeLists.txt: ctest shows a skip.
set -euo pipefail
say() { printf 'trainyard_test: %s\n' "$*" >&2; }

if [[ -z ${ZK_CONNECT:-} && -z ${ZKR_ENSEMBLE_SCRIPT:-} ]]; then
  say "skipped: neither ZK_CONNECT nor ZKR_ENSEMBLE_SCRIPT is set"
  exit 77
fi
bin=${ZKR_BUILD_DIR:?}/examples/zkr-trainyard
[[ -x $bin ]] || { say "$bin is not built"; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/trainyard-test.XXXXXX")
out=$work/out
# shellcheck source=tests/scripts/own_servers.sh
source "$(dirname "$0")/own_servers.sh"
own_servers_start "$work" trainyard_test

# The dispatcher's invariants, as the summary names them: each must be there
# and hold in every run.
dispatched=(
  "[ ok ] every batch node holds a batch"
  "[ ok ] every message published exactly once and in order"
  "[ ok ] epochs only rise across publishes"
  "[ ok ] no publish by a deposed leader accepted"
  "[ ok ] every dispatcher candidate not killed ended cleanly"
)

failures=0
# run WANTED_RC FAILOVERS WANTED_LINE... -- ARGS...: runs a train yard, checks
# its exit code, that its summary has every WANTED_LINE, and that it reports
# at least FAILOVERS dispatcher failovers, each to a newer epoch.
run() {
  local want_rc=$1 want_failovers=$2 rc=0 line failovers problems=()
  shift 2
  local wanted=()
  while [[ $1 != -- ]]; do
    wanted+=("$1")
    shift
  done
  shift
  say "zkr-trainyard $*"
  # --timeout guards against a hang, not a slow machine: the program's default
  # of 300 s. (At 120 s, the chaos run's 1500 messages once ran out of time,
  # 1440 of them done, with a sanitized build beside the suite.)
  "$bin" --trains 20 --timeout 300 "$@" >"$out" 2>&1 || rc=$?
  [[ $rc -eq $want_rc ]] || problems+=("exit $rc (wanted $want_rc)")
  for line in "${wanted[@]}"; do
    grep -qF -- "$line" "$out" || problems+=("summary line '$line' missing")
  done
  # "dispatcher failover N   4.2 s to the next first publish, epoch A -> B"
  failovers=$(awk '/^  dispatcher failover [0-9]+ .* epoch [0-9]+ -> [0-9]+$/ && $NF > $(NF-2)' "$out" | wc -l)
  ((failovers >= want_failovers)) ||
    problems+=("$failovers failover(s) to a newer epoch reported (wanted $want_failovers)")
  if ((${#problems[@]})); then
    say "FAILED: $(printf '%s; ' "${problems[@]}")"
    cat "$out" >&2
    failures=$((failures + 1))
  else
    sed -n '/^train yard:/,$p' "$out" >&2
  fi
}

run 0 0 "result: every invariant holds" "${dispatched[@]}" -- --locations 6 --messages 400
# Three locations, so that lost updates come at once.
run 1 0 "result: INVARIANTS BROKEN" "${dispatched[@]}" -- --locations 3 --messages 300 --no-locks
chaos=1
if [[ -n $own_servers ]]; then
  # Long enough (a few seconds) for the orchestrator, which looks at progress
  # once a second, to see a quarter done and kill the leader before the end:
  # 400 messages were over in under two seconds once, and no leader died. The
  # dispatcher's failovers (about a session timeout each) come on top.
  run 0 2 "result: every invariant holds" "${dispatched[@]}" \
    "[ ok ] the leading dispatcher was killed at least 2 times" -- \
    --locations 6 --messages 1500 --chaos
else
  chaos=0
fi

if [[ $failures -ne 0 ]]; then
  say "$failures run(s) failed"
  exit 1
fi
if ((!chaos)); then
  # Not a pass: the run that matters most did not happen.
  say "skipped: the chaos run needs ZKR_ENSEMBLE_SCRIPT (the others passed)"
  exit 77
fi
say "ok"

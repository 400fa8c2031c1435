#!/usr/bin/env bash
# Test of scripts/ensemble itself: start, leader, kill + failover, restart,
# freeze/thaw, synced, mntr, stop.  Uses its own temporary state directory, so it
# can run next to another ensemble.  Exit status 0 = pass.
#
# The script under test is $ZKR_ENSEMBLE_SCRIPT if set, else found relative
# to this file.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SCRIPT=${ZKR_ENSEMBLE_SCRIPT:-$HERE/../../scripts/ensemble}
[[ -x $SCRIPT ]] || { echo "ensemble_test: $SCRIPT not executable" >&2; exit 1; }

DIR=$(mktemp -d "${TMPDIR:-/tmp}/zkr-ensemble-test.XXXXXX")
E() { "$SCRIPT" -q --dir "$DIR" "$@"; }

PIDS=()
cleanup() {
  local rc=$?
  trap - EXIT
  if [[ -d $DIR ]]; then
    if ((rc)); then
      echo "ensemble_test: status at failure:" >&2
      E status >&2 || true
    fi
    E stop || true
  fi
  rm -rf -- "$DIR"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

STEP=""
step() { STEP=$*; echo "ensemble_test: $STEP" >&2; }
fail() { echo "ensemble_test: FAIL [$STEP]: $*" >&2; exit 1; }
now_ms() { local t=${EPOCHREALTIME//[.,]/}; echo $((t / 1000)); }

# field F (2=pid 3=port 4=state 5=mode) of server I in `status`
field() { E status | awk -v i="$1" -v f="$2" '$1 == i { print $f }'; }

# wait up to SECONDS for CMD... to succeed
eventually() { # SECONDS CMD...
  local limit=$(($1 * 1000)) t0
  shift
  t0=$(now_ms)
  until "$@"; do
    (($(now_ms) - t0 < limit)) || return 1
    sleep 0.1
  done
}

gone() { # PID: no such process, or a zombie nobody has reaped yet
  local st
  st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 0
  [[ -z $st || $st == Z || $st == X ]]
}

# ------------------------------------------------------------------------
step "start -n 3"
t0=$(now_ms)
CONNECT=$(E start -n 3)
echo "ensemble_test: started in $(($(now_ms) - t0)) ms: $CONNECT" >&2
[[ $CONNECT =~ ^127\.0\.0\.1:[0-9]+,127\.0\.0\.1:[0-9]+,127\.0\.0\.1:[0-9]+$ ]] ||
  fail "bad connect string '$CONNECT'"
[[ $(E connect) == "$CONNECT" ]] || fail "connect verb disagrees"
[[ $(<"$DIR/connect") == "$CONNECT" ]] || fail "DIR/connect disagrees"
[[ $(wc -l <"$DIR/pids") == 3 ]] || fail "pids file should have 3 lines"
for i in 1 2 3; do
  [[ $CONNECT == *"127.0.0.1:$(E port "$i")"* ]] || fail "port $i not in connect string"
  pid=$(E pid "$i")
  if ! [[ $pid =~ ^[0-9]+$ ]] || ! kill -0 "$pid"; then fail "server $i pid '$pid' not running"; fi
  PIDS+=("$pid")
  [[ $(field "$i" 4) == alive ]] || fail "server $i not alive"
done
modes=$(E status | awk '{ print $5 }' | sort | tr '\n' ' ')
[[ $modes == "follower follower leader " ]] || fail "modes: $modes"

step "second start in the same dir is refused"
if E start -n 3 >/dev/null 2>&1; then fail "second start succeeded"; fi

step "leader"
L=$(E leader)
[[ $L =~ ^[123]$ ]] || fail "leader gave '$L'"
[[ $(field "$L" 5) == leader ]] || fail "status does not show $L as leader"

step "mntr"
# Captured first: with pipefail, `E mntr | grep -q` fails whenever grep stops
# reading at its match before mntr has written everything (SIGPIPE).
MNTR=$(E mntr "$L")
grep -qE '^zk_znode_count[[:space:]]+[0-9]+' <<<"$MNTR" || fail "no zk_znode_count in mntr"
grep -qE '^zk_server_state[[:space:]]+leader' <<<"$MNTR" || fail "mntr state is not leader"

step "kill the leader ($L): another one takes over"
OLDPID=$(E pid "$L")
t0=$(now_ms)
E kill "$L"
gone "$OLDPID" || fail "killed leader pid $OLDPID still running"
[[ $(field "$L" 4) == dead && $(field "$L" 5) == down ]] || fail "killed server not dead/down"
new_leader() { NL=$(ZKR_LEADER_TIMEOUT=1 E leader 2>/dev/null) && [[ $NL != "$L" ]]; }
eventually 30 new_leader || fail "no new leader within 30 s"
echo "ensemble_test: new leader $NL after $(($(now_ms) - t0)) ms" >&2
E kill "$L" || fail "kill of a dead server should be a no-op"

step "restart $L"
E restart "$L"
[[ $(field "$L" 4) == alive ]] || fail "restarted server not alive"
[[ $(field "$L" 5) == follower ]] || fail "restarted server is not a follower"
NEWPID=$(E pid "$L")
[[ $NEWPID != "$OLDPID" ]] || fail "pid did not change on restart"
PIDS+=("$NEWPID")
if E restart "$L" 2>/dev/null; then fail "restart of a running server succeeded"; fi

step "freeze/thaw a follower"
F=""
for i in 1 2 3; do if [[ $i != "$NL" ]]; then F=$i; break; fi; done
E freeze "$F"
[[ $(field "$F" 4) == frozen ]] || fail "frozen follower $F not shown as frozen"
[[ $(field "$F" 5) == down ]] || fail "frozen follower $F not shown as down"
[[ $(E leader) == "$NL" ]] || fail "leader changed while a follower was frozen"
applied() { printf '%d' "$(E zxid "$1")"; }
synced_followers() { E mntr "$NL" | sed -n 's/^zk_synced_followers[[:space:]]*//p'; }
# The leader drops a follower that stops answering (syncLimit): then the
# thawed one must sync again before `synced` may return.
dropped() { [[ $(synced_followers) == 1 ]]; }
eventually 30 dropped || fail "the leader still counts frozen follower $F as synced"
E thaw "$F"
[[ $(field "$F" 4) == alive ]] || fail "thawed follower $F not alive"

step "synced: returns once the thawed follower is in sync again"
before=$(applied "$NL")
E synced || fail "synced failed with every server running"
[[ $(synced_followers) == 2 ]] || fail "synced returned with $(synced_followers) follower(s) in sync, not 2"
# Counted is not caught up: each follower has also applied what the leader
# had before the call.
for i in 1 2 3; do
  now=$(applied "$i") || fail "server $i does not say what it applied"
  ((now >= before)) || fail "synced returned with server $i at zxid $now, behind $before"
done
[[ $(field "$F" 5) == follower ]] || fail "thawed follower $F does not serve again"

step "synced: fails, naming why, with no quorum left"
E kill "$F"
E kill "$L"
# The one left may still call itself leader for a moment, or be looking.
if out=$(ZKR_SYNC_TIMEOUT=1 E synced 2>&1); then fail "synced succeeded with one server of three"; fi
[[ $out == *"no leader among the 1 running"* || $out == *"and 1 for a quorum of 3"* ]] ||
  fail "synced's error does not say what is missing: $out"

step "kill waits until the others are synced; --now does not"
if out=$(ZKR_SYNC_TIMEOUT=1 E kill "$NL" 2>&1); then fail "kill did not wait for synced servers"; fi
[[ $out == *"no leader among the 1 running"* || $out == *"and 1 for a quorum of 3"* ]] ||
  fail "the refused kill does not say why: $out"
[[ $(field "$NL" 4) == alive ]] || fail "a refused kill still stopped server $NL"
ZKR_SYNC_TIMEOUT=1 E --now kill "$NL" || fail "kill --now did not kill server $NL at once"
[[ $(field "$NL" 4) == dead ]] || fail "kill --now left server $NL $(field "$NL" 4)"

step "stop"
E stop
[[ ! -e $DIR ]] || fail "stop left $DIR behind"
for pid in "${PIDS[@]}"; do
  gone "$pid" || fail "pid $pid still running after stop"
done
E stop || fail "second stop failed"

echo "ensemble_test: PASS" >&2

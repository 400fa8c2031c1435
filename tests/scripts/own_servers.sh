# shellcheck shell=bash
# tests/scripts/own_servers.sh — sourced by the script tests that need servers
# no other test uses: bench_test counts the servers' requests and writes,
# trainyard_test kills their leader. On servers of their own they run beside
# the live tests instead of holding the shared ensemble.
#
#   own_servers_start WORK NAME
#
# sets an EXIT trap that stops those servers and removes the directory WORK,
# however the test ends (a failed test first prints the servers' digest: their
# elections, roles and errors, which the removal would lose); then, with
# ZKR_ENSEMBLE_SCRIPT (scripts/test gives it), starts three servers in
# WORK/servers and exports ZK_CONNECT and ZKR_ENSEMBLE_DIR for them, and sets
# own_servers to their directory.
# Without it, ZK_CONNECT's servers are used and own_servers stays empty.
# NAME prefixes its messages.

own_servers=
own_servers_work=

# shellcheck disable=SC2317  # invoked by trap
own_servers_cleanup() {
  local rc=$?
  trap - EXIT
  if [[ -n $own_servers ]]; then
    "$ZKR_ENSEMBLE_SCRIPT" -q --dir "$own_servers" --keep stop || true
    # 77: skipped, which is no failure.
    if [[ $rc -ne 0 && $rc -ne 77 ]]; then
      printf 'the servers of its own, from their logs:\n' >&2
      "$ZKR_ENSEMBLE_SCRIPT" --dir "$own_servers" digest >&2 || true
    fi
  fi
  rm -rf -- "$own_servers_work"
  exit "$rc"
}

own_servers_start() {
  own_servers_work=$1
  trap own_servers_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM HUP
  [[ -n ${ZKR_ENSEMBLE_SCRIPT:-} ]] || return 0
  own_servers=$1/servers
  mkdir -p "$own_servers"
  if ! ZK_CONNECT=$("$ZKR_ENSEMBLE_SCRIPT" -q --dir "$own_servers" start -n 3); then
    printf '%s: could not start servers of its own with %s\n' "$2" "$ZKR_ENSEMBLE_SCRIPT" >&2
    exit 1
  fi
  export ZK_CONNECT ZKR_ENSEMBLE_DIR=$own_servers
  printf '%s: on servers of its own: %s\n' "$2" "$ZK_CONNECT" >&2
}

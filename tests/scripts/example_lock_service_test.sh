#!/usr/bin/env bash
# tests/scripts/example_lock_service_test.sh — runs examples/lock_service.cpp
# (an Asio service that takes per-key locks for 2,000 requests on one
# thread) against the test ensemble; it exits 0 only if no key had two
# requests inside at once, every request ended, and no lock node was left.
# Environment: ZK_CONNECT (without it: skipped, exit 77), ZKR_BUILD_DIR.
set -euo pipefail
say() { printf 'example_lock_service_test: %s\n' "$*" >&2; }

if [[ -z ${ZK_CONNECT:-} ]]; then
  say "skipped: ZK_CONNECT is not set"
  exit 77
fi
bin=${ZKR_BUILD_DIR:?}/examples/zkr-lock_service
[[ -x $bin ]] || { say "$bin is not built"; exit 1; }
# Bounded: every request waits 60 s at most for its lock.
timeout 300 "$bin" "$ZK_CONNECT" 2000 20

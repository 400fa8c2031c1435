#!/usr/bin/env bash
# tests/scripts/skip_policy_test.sh — skips are visible, and fail under CI.
#   1. The script tests exit 77 without an ensemble, and ctest has 77 as
#      their SKIP_RETURN_CODE: a skip, not a pass.
#   2. scripts/check-skips, on the JUnit record of a real ctest run with a
#      script skip and a real GTEST_SKIP (one of our integration tests,
#      without ZK_CONNECT): lists both; with CI=true fails naming both,
#      unless each names a reason the accepted list has.
# Needs no ensemble: it makes its own skips. Environment: ZKR_SOURCE_DIR,
# ZKR_BUILD_DIR.
set -euo pipefail
say() { printf 'skip_policy_test: %s\n' "$*" >&2; }
src=${ZKR_SOURCE_DIR:?} build=${ZKR_BUILD_DIR:?}
work=$(mktemp -d "${TMPDIR:-/tmp}/skip-policy-test.XXXXXX")
trap 'rm -rf -- "$work"' EXIT
failures=0
fail() { say "FAILED: $*"; failures=$((failures + 1)); }

# ---- 1. the script tests' skip code
for script in bench_test trainyard_test; do
  rc=0
  env -u ZK_CONNECT -u ZKR_ENSEMBLE_SCRIPT ZKR_BUILD_DIR="$build" \
    bash "$src/tests/scripts/$script.sh" >"$work/out" 2>&1 || rc=$?
  [[ $rc -eq 77 ]] ||
    fail "$script.sh without ZK_CONNECT or ZKR_ENSEMBLE_SCRIPT exited $rc, wanted 77: $(cat "$work/out")"
done
ctest --test-dir "$build" -R '^scripts\.' --show-only=json-v1 >"$work/tests.json"
scripts=$(grep -c '"name" : "scripts\.' "$work/tests.json" || true)
with_code=$(grep -A1 '"name" : "SKIP_RETURN_CODE"' "$work/tests.json" | grep -c '"value" : 77' || true)
((scripts > 0)) || fail "ctest lists no scripts.* test"
[[ $with_code -eq $scripts ]] || fail "$with_code of $scripts script tests have SKIP_RETURN_CODE 77"

# ---- 2. check-skips on a real ctest run
gtest_case='LockIntegrationTest/0.ExcludesAndReleases'
# The executable that holds it (a batch of test files), as ctest runs it.
gtest_bin=$(ctest --test-dir "$build" -R '^integration[.]LockIntegrationTest[.]ExcludesAndReleases<zkr::InterProcessMutex>$' \
  --show-only=json-v1 |
  jq -r '.tests[0].command[0] // empty')
[[ -n $gtest_bin && -x $gtest_bin ]] || { say "no built executable holds integration.$gtest_case"; exit 1; }
mkdir "$work/project"
cat >"$work/project/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.20)
project(skips NONE)
enable_testing()
add_test(NAME script_skip COMMAND sh -c "echo 'script_skip: skipped: the moon is not up'; exit 77")
set_tests_properties(script_skip PROPERTIES SKIP_RETURN_CODE 77)
# As gtest_discover_tests declares each test.
add_test(NAME gtest_skip COMMAND "$gtest_bin" "--gtest_filter=$gtest_case")
set_tests_properties(gtest_skip PROPERTIES SKIP_REGULAR_EXPRESSION "\\\\[  SKIPPED \\\\]")
add_test(NAME passes COMMAND sh -c "echo skipping nothing; exit 0")
EOF
cmake -S "$work/project" -B "$work/project/build" >/dev/null
junit=$work/junit.xml
env -u ZK_CONNECT ctest --test-dir "$work/project/build" --output-junit "$junit" >"$work/ctest.out" 2>&1 ||
  fail "the ctest run failed: $(cat "$work/ctest.out")"

check() { # WANTED_RC ACCEPTED_FILE CI -> stderr in $work/check.err
  local want=$1 rc=0
  CI=$3 ZKR_ACCEPTED_SKIPS=$2 bash "$src/scripts/check-skips" "$junit" 2>"$work/check.err" || rc=$?
  [[ $rc -eq $want ]] || fail "check-skips (CI=$3, accepted $(basename "$2")) exited $rc, wanted $want: $(cat "$work/check.err")"
}
printf '# none\n' >"$work/none.txt"
printf '# both\nthe moon is not up\nno ensemble: run scripts/test\n' >"$work/both.txt"
printf '# one\nthe moon is not up\n' >"$work/one.txt"

check 0 "$work/none.txt" ""  # outside CI: shown, not fatal
grep -q 'SKIPPED: script_skip: .*the moon is not up' "$work/check.err" || fail "script skip not listed: $(cat "$work/check.err")"
grep -q 'SKIPPED: gtest_skip: no ensemble: run scripts/test' "$work/check.err" ||
  fail "GTEST_SKIP not listed with its message: $(cat "$work/check.err")"
grep -q 'passes' "$work/check.err" && fail "a passing test was listed as skipped"

check 1 "$work/none.txt" true  # CI: both refused
grep -q '2 test(s) skipped, 2 without' "$work/check.err" || fail "CI did not refuse both: $(cat "$work/check.err")"

check 0 "$work/both.txt" true  # CI: both named an accepted reason
grep -q 'skipped (accepted in CI): gtest_skip' "$work/check.err" || fail "accepted skip not shown: $(cat "$work/check.err")"

check 1 "$work/one.txt" true  # CI: only the GTEST_SKIP is refused
if ! grep -q 'SKIPPED: gtest_skip' "$work/check.err" || grep -q 'SKIPPED: script_skip' "$work/check.err"; then
  fail "wrong one refused: $(cat "$work/check.err")"
fi

# The project's own list: today CI accepts no skip at all.
check 1 "$src/tests/ci_accepted_skips.txt" true

# No record at all is no proof of no skips under CI.
rc=0
CI=true bash "$src/scripts/check-skips" "$work/none.xml" 2>/dev/null || rc=$?
[[ $rc -eq 1 ]] || fail "a missing JUnit file under CI exited $rc, wanted 1"

if ((failures)); then
  say "$failures failure(s)"
  exit 1
fi
say "ok"

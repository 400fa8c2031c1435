#!/usr/bin/env bash
# tests/scripts/unity_names_test.sh — the unity build cannot mix two files'
# helpers up (zkr_compile_in_batches in CMakeLists.txt says how it could):
#   1. every target this build compiles in batches (the batch files CMake
#      wrote) passes scripts/check-unity-names over all of its sources;
#   2. the check itself: it fails on two files with a file-local helper of one
#      name, and on a helper whose name another file calls, naming each; it
#      passes a using-declaration of one entity in both, and an alias of
#      one type in both (not of two); --batches forms
#      batches of files that do not clash, keeping apart a file whose
#      file-local name a test header of the other uses.
# Needs no ensemble. Environment: ZKR_SOURCE_DIR, ZKR_BUILD_DIR.
set -euo pipefail
say() { printf 'unity_names_test: %s\n' "$*" >&2; }
src=${ZKR_SOURCE_DIR:?} build=${ZKR_BUILD_DIR:?}
check=$src/scripts/check-unity-names
work=$(mktemp -d "${TMPDIR:-/tmp}/unity-names-test.XXXXXX")
trap 'rm -rf -- "$work"' EXIT
failures=0
fail() { say "FAILED: $*"; failures=$((failures + 1)); }

# ---- 1. the targets built in batches
mapfile -t target_dirs < <(find "$build" -type d -name Unity -path '*/CMakeFiles/*' | sort)
if ((${#target_dirs[@]} == 0)); then
  grep -q '^ZKR_UNITY_BUILD:BOOL=OFF' "$build/CMakeCache.txt" ||
    fail "no target of $build is built in batches, and ZKR_UNITY_BUILD is not OFF"
fi
# A target that an earlier configuration had (the unit tests' batches change
# as files come and go) leaves its folder behind: only today's count.
targets=$(cmake --build "$build" --target help | sed -E 's/^\.\.\. //; s/:.*//')
for dir in "${target_dirs[@]}"; do
  target=$(basename "$(dirname "$dir")" .dir)
  grep -qxF -- "$target" <<<"$targets" || continue
  mapfile -t sources < <(sed -n 's/^#include "\(.*\)"$/\1/p' "$dir"/unity_*.cxx | sort -u)
  ((${#sources[@]} > 1)) || fail "$target: its batch files include ${#sources[@]} sources"
  if "$check" "${sources[@]}" >"$work/out" 2>&1; then
    say "$target: ${#sources[@]} sources, no file-local name that another of them could reach"
  else
    fail "$target: $(cat "$work/out")"
  fi
done

# ---- 2. the check finds a clash, and only a real one
mkdir -p "$work/clash"
cat >"$work/clash/a.cpp" <<'EOF'
namespace zkr {
namespace {
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;
using Stamp = std::chrono::steady_clock::time_point;
template <class T>
T await(std::future<T>& reply) { return reply.get(); }
}  // namespace
}  // namespace zkr
EOF
cat >"$work/clash/b.cpp" <<'EOF'
namespace zkr {
namespace {
using std::chrono::milliseconds;  // the same entity: no clash
using Clock = std::chrono::steady_clock;  // an alias of the same type: no clash
using Stamp = std::chrono::system_clock::time_point;  // another type: a clash
template <class T>
Result<T> await(std::future<Result<T>>& reply) { return reply.get(); }
}  // namespace
}  // namespace zkr
EOF
rc=0
"$check" "$work/clash/a.cpp" "$work/clash/b.cpp" >"$work/out" 2>&1 || rc=$?
[[ $rc -eq 1 ]] || fail "two files with a helper 'await': exit $rc, wanted 1"
grep -q "'await' is file-local in 2 files" "$work/out" || fail "the clash is not named: $(cat "$work/out")"
! grep -q milliseconds "$work/out" || fail "one entity's using-declarations reported: $(cat "$work/out")"
! grep -q Clock "$work/out" || fail "an alias declared again for the same type reported: $(cat "$work/out")"
grep -q "'Stamp' is file-local in 2 files" "$work/out" || fail "an alias of two types is not named: $(cat "$work/out")"
sed -i 's/using Stamp = .*/using Stamp = std::chrono::steady_clock::time_point;/' "$work/clash/b.cpp"
sed -i 's/await/await_result/' "$work/clash/b.cpp"
"$check" "$work/clash/a.cpp" "$work/clash/b.cpp" >"$work/out" 2>&1 ||
  fail "renamed, the files still clash: $(cat "$work/out")"
# A helper that would join the overload set of a function another file calls.
cat >"$work/clash/c.cpp" <<'EOF'
namespace zkr {
void use(std::future<int>& reply) { (void)await_result(reply); }
}  // namespace zkr
EOF
rc=0
"$check" "$work/clash/a.cpp" "$work/clash/b.cpp" "$work/clash/c.cpp" >"$work/out" 2>&1 || rc=$?
[[ $rc -eq 1 ]] || fail "a helper another file calls: exit $rc, wanted 1"
grep -q "'await_result', file-local in .*b.cpp, is used in .*c.cpp" "$work/out" ||
  fail "the helper another file calls is not named: $(cat "$work/out")"

# GoogleTest's macros declare no file-local name: two files of tests are no
# clash for having tests.
cat >"$work/clash/t1.cpp" <<'EOF'
namespace {
TEST(OneSuite, Works) {}
TEST_F(SomeFixture, Works) {}
}  // namespace
EOF
sed 's/OneSuite/OtherSuite/; s/SomeFixture/OtherFixture/' "$work/clash/t1.cpp" >"$work/clash/t2.cpp"
"$check" "$work/clash/t1.cpp" "$work/clash/t2.cpp" >"$work/out" 2>&1 ||
  fail "two files of tests reported as clashing: $(cat "$work/out")"

# --batches: a file goes to the first batch it clashes with none of, and a
# batch holds no more than it is given. With c calling a helper named as one
# of a's, a and c clash; b clashes with neither.
sed -i 's/await_result/await/' "$work/clash/c.cpp"
"$check" --batches 8 "$work/clash/a.cpp" "$work/clash/b.cpp" "$work/clash/c.cpp" >"$work/out" 2>&1 ||
  fail "--batches failed: $(cat "$work/out")"
expected=$(printf '1 %s\n1 %s\n2 %s' "$work/clash/a.cpp" "$work/clash/b.cpp" "$work/clash/c.cpp")
[[ $(cat "$work/out") == "$expected" ]] ||
  fail "--batches 8 of a, b, c: got [$(cat "$work/out")], wanted a and b in batch 1, c in 2"
"$check" --batches 1 "$work/clash/a.cpp" "$work/clash/b.cpp" >"$work/out" 2>&1 ||
  fail "--batches 1 failed: $(cat "$work/out")"
expected=$(printf '1 %s\n2 %s' "$work/clash/a.cpp" "$work/clash/b.cpp")
[[ $(cat "$work/out") == "$expected" ]] || fail "--batches 1: got [$(cat "$work/out")], wanted one file a batch"
rc=0
"$check" --batches 0 "$work/clash/a.cpp" >"$work/out" 2>&1 || rc=$?
[[ $rc -eq 2 ]] || fail "--batches 0: exit $rc, wanted 2"

# Batching alone: a name file-local in one file that a test header of another
# file uses (a fixture's constant) would make that header's use ambiguous in
# one translation unit, so the two go to different batches; a file that
# includes no such header still joins the first batch.
mkdir -p "$work/header"
cat >"$work/header/fixture.hpp" <<'EOF'
namespace zkr::test {
inline constexpr int kWait = 5;
inline int twice_the_wait() { return 2 * kWait; }
}  // namespace zkr::test
EOF
cat >"$work/header/uses_fixture.cpp" <<'EOF'
#include "fixture.hpp"
namespace zkr::test {
TEST(Fixture, Waits) { EXPECT_EQ(twice_the_wait(), 10); }
}  // namespace zkr::test
EOF
cat >"$work/header/own_wait.cpp" <<'EOF'
namespace zkr::test {
namespace {
constexpr int kWait = 7;
}  // namespace
TEST(OwnWait, Waits) { EXPECT_EQ(kWait, 7); }
}  // namespace zkr::test
EOF
cat >"$work/header/plain.cpp" <<'EOF'
namespace zkr::test {
TEST(Plain, Works) {}
}  // namespace zkr::test
EOF
"$check" --batches 8 "$work/header/uses_fixture.cpp" "$work/header/own_wait.cpp" \
  "$work/header/plain.cpp" >"$work/out" 2>&1 || fail "--batches with a header failed: $(cat "$work/out")"
expected=$(printf '1 %s\n1 %s\n2 %s' "$work/header/uses_fixture.cpp" "$work/header/plain.cpp" \
  "$work/header/own_wait.cpp")
[[ $(cat "$work/out") == "$expected" ]] ||
  fail "--batches with a fixture header's kWait: got [$(cat "$work/out")], wanted own_wait.cpp apart"

((failures == 0)) || exit 1
say "passed"

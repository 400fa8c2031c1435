#!/usr/bin/env bash
# tests/scripts/unity_names_test.sh — the unity build cannot mix two files'
# helpers up (zkr_compile_in_batches in CMakeLists.txt says how it could):
#   1. every target this build compiles in batches (the batch files CMake
#      wrote) passes scripts/check-unity-names over all of its sources;
#   2. the check itself: it fails on two files with a file-local helper of one
#      name, and on a helper whose name another file calls, naming each; it
#      passes a using-declaration of one entity in both.
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
for dir in "${target_dirs[@]}"; do
  target=$(basename "$(dirname "$dir")" .dir)
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
template <class T>
T await(std::future<T>& reply) { return reply.get(); }
}  // namespace
}  // namespace zkr
EOF
cat >"$work/clash/b.cpp" <<'EOF'
namespace zkr {
namespace {
using std::chrono::milliseconds;  // the same entity: no clash
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

((failures == 0)) || exit 1
say "passed"

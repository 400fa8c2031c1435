# tests/sanitize/env.sh MODE — sourced by `scripts/test --sanitize=MODE`
# (MODE asan or tsan) from the source root. Sets what scripts/test then uses:
#   BUILD_DIR, ZKR_CMAKE_ARGS   a build of its own, with -DZKR_SANITIZE
#   ZKR_SANITIZE_CTEST_ARGS     the tests that mode runs (put before the user's)
#   ZKR_SANITIZE_LOG_DIR        where every sanitizer report goes (see below)
# and exports the runtime options. Build dirs: build-asan, build-tsan, or
# ZKR_SANITIZE_BUILD_DIR.
#
# Reports go to files, not only to a test's stderr: tests run the zkr command,
# lock workers and chaos workers as child processes, and a child's report
# would be lost when the test looks only at the child's exit code or output.
# scripts/test fails the run if any report file exists at the end, and prints
# them.
# shellcheck shell=bash disable=SC2034  # scripts/test, which sources this, reads them

zkr_sanitize_mode=$1
ZKR_SANITIZE_SOURCE_DIR=$(pwd)
zkr_sanitize_dir=$ZKR_SANITIZE_SOURCE_DIR/tests/sanitize

# What CI runs under ASan+UBSan (.ci/run): every unit test (all the recipes on
# the in-memory ensemble, the Client's threads, the timer thread), and the live
# tests of the locks (blocking and async, the multi-process stress test with
# its sanitized workers), the counters (eight sessions racing), cleanup, the
# Client under faults and destroyed in use, shared roots, and Curator and kazoo interop (our side is sanitized;
# the Java and Python peers are not). Left out, and run by the full `--sanitize=asan`: the zkr command's
# process tests, the scripts (bench, train yard, examples), the chaos runs and
# the Keeper operation tests, for CI's time.
ZKR_ASAN_CI_TESTS='^(unit\.|chaos\.MultiLockSessionExpiry|integration\.(Lock|CleanupIntegrationTest|ClientFaults|ClientDestroyed|SharedRootsTest|Curator|Kazoo|CounterIntegrationTest|GroupMemberIntegrationTest|PersistentNodeIntegrationTest))'

case $zkr_sanitize_mode in
  asan)
    BUILD_DIR=${ZKR_SANITIZE_BUILD_DIR:-build-asan}
    zkr_sanitizers=address,undefined
    # Everything but the install test: it checks the package, and builds a
    # consumer without -fsanitize against this instrumented library, which
    # ASan refuses to start ("ASan runtime does not come first"); nor the
    # package test, which tests the .debs of a Release build of its own,
    # not this build. ZKR_ASAN_TESTS (a ctest -R pattern) narrows the run;
    # ZKR_ASAN_TESTS=ci, as .ci/run sets it, means ZKR_ASAN_CI_TESTS above.
    ZKR_SANITIZE_CTEST_ARGS=(-E '^scripts\.(install_consumer|package)_test$')
    zkr_sanitize_tools=ON
    if [[ ${ZKR_ASAN_TESTS:-} == ci ]]; then
      ZKR_ASAN_TESTS=$ZKR_ASAN_CI_TESTS
      zkr_sanitize_tools=OFF # none of CI's tests runs the zkr command or a benchmark
    fi
    if [[ -n ${ZKR_ASAN_TESTS:-} ]]; then ZKR_SANITIZE_CTEST_ARGS+=(-R "$ZKR_ASAN_TESTS"); fi
    ;;
  tsan)
    BUILD_DIR=${ZKR_SANITIZE_BUILD_DIR:-build-tsan}
    zkr_sanitizers=thread
    # The tests where our threads meet: every unit test (the locks, the
    # Client and its callback and session threads on the fake keeper; the
    # pure-logic ones cost little), and the live tests of the locks, the
    # stress test with its worker processes (sanitized too), the counters'
    # eight racing sessions, the C client's completions, watches and faults, cleanup, and a client destroyed while
    # in use. Left out: the zkr command's and the scripts' process-level
    # tests, Curator interop (its peer is Java) and the chaos runs, whose
    # workers run the same lock code as the stress test.
    ZKR_TSAN_DEFAULT_TESTS='^(unit\.|chaos\.MultiLockSessionExpiry|integration\.(LockIntegrationTest|LockStressTest|LockKinds/LockKindStressTest|ClientFaults|KeeperTest|CleanupIntegrationTest|ClientDestroyed|SharedRootsTest|CounterIntegrationTest|GroupMemberIntegrationTest|PersistentNodeIntegrationTest))'
    zkr_sanitize_tools=OFF # none of these runs the zkr command or a benchmark
    ZKR_SANITIZE_CTEST_ARGS=(-R "${ZKR_TSAN_TESTS:-$ZKR_TSAN_DEFAULT_TESTS}")
    ;;
  *)
    printf 'sanitize: unknown mode %s (asan or tsan)\n' "$zkr_sanitize_mode" >&2
    return 2
    ;;
esac
export BUILD_DIR
# Without the tools (the zkr command, benchmarks, examples, the chaos runner)
# when the tests to run need none of them: a sanitized build is slow, and they
# are a third of it. ZKR_SANITIZE_TOOLS=ON builds them anyway (for a pattern
# of one's own in ZKR_TSAN_TESTS or ZKR_ASAN_TESTS that runs them).
zkr_sanitize_tools=${ZKR_SANITIZE_TOOLS:-$zkr_sanitize_tools}
ZKR_CMAKE_ARGS="${ZKR_CMAKE_ARGS:-} -DZKR_SANITIZE=$zkr_sanitizers -DZKR_BUILD_TOOLS=$zkr_sanitize_tools"
export ZKR_CMAKE_ARGS

ZKR_SANITIZE_LOG_DIR=$ZKR_SANITIZE_SOURCE_DIR/$BUILD_DIR/sanitizer-reports
rm -rf "$ZKR_SANITIZE_LOG_DIR"
mkdir -p "$ZKR_SANITIZE_LOG_DIR"
zkr_log=log_path=$ZKR_SANITIZE_LOG_DIR/report:log_exe_name=1

# ASan: also catch use after return and bad init order. LSan runs at exit.
export ASAN_OPTIONS="$zkr_log:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1:detect_leaks=1"
export LSAN_OPTIONS="suppressions=$zkr_sanitize_dir/lsan.supp:print_suppressions=0"
# UBSan: built with -fno-sanitize-recover, so the first finding aborts.
export UBSAN_OPTIONS="$zkr_log:print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="$zkr_log:suppressions=$zkr_sanitize_dir/tsan.supp:print_suppressions=0:second_deadlock_stack=1:halt_on_error=0"
export ZKR_SANITIZE_LOG_DIR
unset zkr_sanitize_mode zkr_sanitize_dir zkr_sanitizers zkr_sanitize_tools zkr_log

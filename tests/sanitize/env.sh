# tests/sanitize/env.sh MODE — sourced by `scripts/test --sanitize=MODE`
# (MODE asan or tsan) from the source root. Sets what scripts/test then uses:
#   BUILD_DIR, ZKR_CMAKE_ARGS   a build of its own, with -DZKR_SANITIZE
#   ZKR_SANITIZE_CTEST_ARGS     the tests that mode runs (put before the user's)
#   ZKR_BUILD_TARGET            what scripts/setup builds (for a default list)
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

# Each mode's default list of tests is a phase of tests/CMakeLists.txt, named
# by test executable: the label that selects their tests, and a target that
# builds only those executables (tests/CMakeLists.txt says what each holds and
# leaves out). A pattern of one's own (ZKR_TSAN_TESTS, ZKR_ASAN_TESTS: ctest
# -R patterns) builds everything.
case $zkr_sanitize_mode in
  asan)
    BUILD_DIR=${ZKR_SANITIZE_BUILD_DIR:-build-asan}
    zkr_sanitizers=address,undefined
    # Everything but the install test: it checks the package, and builds a
    # consumer without -fsanitize against this instrumented library, which
    # ASan refuses to start ("ASan runtime does not come first"); nor the
    # package test, which tests the .debs of a plain build of its own,
    # not this build. ZKR_ASAN_TESTS (a ctest -R pattern) narrows the run;
    # ZKR_ASAN_TESTS=ci, as .ci/run sets it, means the phase asan_ci.
    ZKR_SANITIZE_CTEST_ARGS=(-E '^scripts\.(install_consumer|package)_test$')
    zkr_sanitize_tools=ON
    if [[ ${ZKR_ASAN_TESTS:-} == ci ]]; then
      ZKR_SANITIZE_CTEST_ARGS+=(-L '^asan_ci$')
      ZKR_BUILD_TARGET=zkr_phase_asan_ci
      zkr_sanitize_tools=OFF # none of CI's tests runs the zkr command or a benchmark
    elif [[ -n ${ZKR_ASAN_TESTS:-} ]]; then
      ZKR_SANITIZE_CTEST_ARGS+=(-R "$ZKR_ASAN_TESTS")
    fi
    ;;
  tsan)
    BUILD_DIR=${ZKR_SANITIZE_BUILD_DIR:-build-tsan}
    zkr_sanitizers=thread
    # By default the phase tsan: the tests where our threads meet.
    zkr_sanitize_tools=OFF # none of these runs the zkr command or a benchmark
    if [[ -n ${ZKR_TSAN_TESTS:-} ]]; then
      ZKR_SANITIZE_CTEST_ARGS=(-R "$ZKR_TSAN_TESTS")
    else
      ZKR_SANITIZE_CTEST_ARGS=(-L '^tsan$')
      ZKR_BUILD_TARGET=zkr_phase_tsan
    fi
    ;;
  *)
    printf 'sanitize: unknown mode %s (asan or tsan)\n' "$zkr_sanitize_mode" >&2
    return 2
    ;;
esac
export BUILD_DIR
[[ -z ${ZKR_BUILD_TARGET:-} ]] || export ZKR_BUILD_TARGET
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

#!/usr/bin/env bash
# build_consumer.sh PREFIX WORKDIR — run by the tests that check an
# installed zkrecipes (install_consumer_test.sh: `cmake --install`;
# package_test.sh: the .debs unpacked). Checks the headers under PREFIX,
# builds tests/consumer against PREFIX twice, with find_package(zkrecipes)
# and with pkg-config, and runs both builds, which must load the library
# from PREFIX (the consumer needs no server). Where prometheus-cpp is
# installed (scripts/setup installs it), zkrecipes-prometheus must be under
# PREFIX too: tests/consumer/prometheus is built with find_package(zkrecipes
# COMPONENTS prometheus) and run.
set -euo pipefail
src=${ZKR_SOURCE_DIR:?} prefix=${1:?PREFIX} work=${2:?WORKDIR}

test -f "$prefix/include/zkr/lock.hpp"
# The headers may include only the standard library and each other: the
# -dev package depends on nothing else (cmake/packaging.cmake), and nothing
# may drag in the ZooKeeper C header. The one exception is zkr/asio.hpp,
# which only its users include, and which may include Boost (the package
# suggests it).
if bad=$(grep -rhE '^[[:space:]]*#[[:space:]]*include' --exclude=asio.hpp "$prefix/include/zkr" |
  grep -vE '#[[:space:]]*include[[:space:]]*(<[a-z_]+>|"zkr/[a-z_]+\.hpp"|<zkr/[a-z_]+\.hpp>)'); then
  printf 'an installed header includes more than the standard library:\n%s\n' "$bad" >&2
  exit 1
fi
if bad=$(grep -hE '^[[:space:]]*#[[:space:]]*include' "$prefix/include/zkr/asio.hpp" |
  grep -vE '#[[:space:]]*include[[:space:]]*(<[a-z_]+>|"zkr/[a-z_]+\.hpp"|<boost/[a-z_/]+\.hpp>)'); then
  printf 'an installed header includes more than the standard library:\n%s\n' "$bad" >&2
  exit 1
fi

# spdlog is private too: no public declaration names one of its types.
if bad=$(grep -rnE 'spdlog::|namespace spdlog' "$prefix/include/zkr"); then
  printf 'an installed header names spdlog, a private dependency:\n%s\n' "$bad" >&2
  exit 1
fi

libdir=$(dirname "$(find "$prefix" -name 'libzkrecipes.so' | head -n 1)")
[[ $libdir != . ]] || { echo "no libzkrecipes.so under $prefix" >&2; exit 1; }
# Runs a consumer with PREFIX's libdir first, and checks it loaded ours.
run() { # BINARY
  LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$1"
  local loaded
  loaded=$(LD_LIBRARY_PATH="$libdir" ldd "$1" | awk '$1 ~ /^libzkrecipes\.so/ {print $3}')
  [[ $(realpath "$loaded") == "$(realpath "$libdir")"/* ]] ||
    { echo "$1 loaded libzkrecipes from ${loaded:-nowhere}, not $libdir" >&2; exit 1; }
}

cmake -S "$src/tests/consumer" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
run "$work/cmake-build/consumer"

flags=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs zkrecipes)
# shellcheck disable=SC2086  # the flags are words
g++ -o "$work/pc-consumer" "$src/tests/consumer/main.cpp" $flags
run "$work/pc-consumer"

shopt -s nullglob
prometheus_cpp=(/usr/lib/*/cmake/prometheus-cpp/prometheus-cpp-config.cmake)
shopt -u nullglob
if ((${#prometheus_cpp[@]})); then
  test -f "$prefix/include/zkr/prometheus.hpp" ||
    { echo "no zkr/prometheus.hpp under $prefix, though prometheus-cpp is installed" >&2; exit 1; }
  cmake -S "$src/tests/consumer/prometheus" -B "$work/prometheus-build" \
    -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
  cmake --build "$work/prometheus-build" >/dev/null
  run "$work/prometheus-build/prometheus_consumer"
fi

#!/usr/bin/env bash
# Installs the built library into a temporary prefix and builds a consumer
# against it twice: with find_package(zkrecipes) and with pkg-config.
set -euo pipefail
src=${ZKR_SOURCE_DIR:?} build=${ZKR_BUILD_DIR:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/include/zkr/lock.hpp"
if grep -rl 'zookeeper/zookeeper.h' "$work/prefix/include"; then
  echo "an installed header includes the ZooKeeper C header" >&2; exit 1
fi

cmake -S "$src/tests/consumer" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
LD_LIBRARY_PATH="$work/prefix/lib:$work/prefix/lib64:${LD_LIBRARY_PATH:-}" "$work/cmake-build/consumer"

pc_dir=$(dirname "$(find "$work/prefix" -name zkrecipes.pc | head -n 1)")
flags=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs zkrecipes)
# shellcheck disable=SC2086
g++ -o "$work/pc-consumer" "$src/tests/consumer/main.cpp" $flags
LD_LIBRARY_PATH="$work/prefix/lib:$work/prefix/lib64:${LD_LIBRARY_PATH:-}" "$work/pc-consumer"
echo "installed package works with find_package and pkg-config"

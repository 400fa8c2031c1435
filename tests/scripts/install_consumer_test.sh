#!/usr/bin/env bash
# Installs the built library into a temporary prefix and builds a consumer
# against it twice: with find_package(zkrecipes) and with pkg-config
# (build_consumer.sh; package_test.sh does the same with the .debs).
set -euo pipefail
build=${ZKR_BUILD_DIR:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" >/dev/null
bash "$(dirname "$0")/build_consumer.sh" "$work/prefix" "$work"
echo "installed package works with find_package and pkg-config"

#!/usr/bin/env bash
# tests/scripts/format_test.sh — the C++ is laid out as .clang-format says:
# scripts/format --check lists every file that differs and fails (run
# scripts/format to fix them). A test rather than a step of scripts/test, so
# that its few seconds of one core go beside the other tests.
# Environment: ZKR_SOURCE_DIR.
set -euo pipefail
cd "${ZKR_SOURCE_DIR:?}"
exec bash scripts/format --check

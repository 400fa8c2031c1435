#!/usr/bin/env bash
# tests/scripts/docs_test.sh — the API reference builds with no warning of
# Doxygen's (scripts/docs fails on any: a header comment it cannot read).
# A test rather than a step of scripts/test, so that its few seconds of one
# core go beside the other tests. Writes build-docs/ (scripts/docs's default;
# DOCS_DIR chooses another).
# Environment: ZKR_SOURCE_DIR.
set -euo pipefail
cd "${ZKR_SOURCE_DIR:?}"
exec bash scripts/docs

#!/usr/bin/env bash
# The whole test suite: installs what is missing, checks formatting and
# clippy, then runs unit, property and integration tests (the integration
# tests start their own PostgreSQL server).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo fmt --all -- --check
cargo clippy --all-targets --quiet -- -D warnings
cargo test

#!/usr/bin/env bash
# The whole test suite: installs what is missing, checks formatting,
# clippy and the doc comments' links, then runs unit, property and
# integration tests (the integration tests start their own PostgreSQL server).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo fmt --all -- --check
cargo clippy --all-targets --quiet -- -D warnings
RUSTDOCFLAGS="-D rustdoc::broken_intra_doc_links -A rustdoc::private_intra_doc_links" cargo doc --no-deps --document-private-items --quiet
cargo test

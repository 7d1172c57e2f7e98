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
# The tests must leave nothing in the working tree (a rejects file by its
# default name, written where a test ran sluice, was committed once).
stray() { git ls-files --others --exclude=/target/ --exclude=/bench/data/ 2>/dev/null | sort; }
before=$(stray)
cargo test
after=$(stray)
if [ "$before" != "$after" ]; then
    echo "the tests left files in the working tree:" >&2
    comm -13 <(echo "$before") <(echo "$after") >&2
    exit 1
fi

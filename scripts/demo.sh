#!/usr/bin/env bash
# The main job end to end on a throwaway local PostgreSQL: installs what is
# missing, builds sluice, then `sluice demo` (extra arguments are passed on,
# e.g. --dataset cname --rows 5M).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release --quiet
exec ./target/release/sluice demo "$@"

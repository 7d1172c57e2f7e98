#!/usr/bin/env bash
# Dense duplicate keys: ROWS rows of (id int PRIMARY KEY, ms, amount, day,
# note), one line in a hundred after the 1,000th repeating the id of a
# random earlier line (one that did not repeat one itself), loaded into the table holding one row (so its key
# is not deferred) by each SLUICE binary given, in alternated rounds, with
# TRUNCATE + CHECKPOINT before each load; then the same rows without the
# duplicates, for the clean time. Prints each load's wall time and checks
# that every loaded row is its key's first line.
#
#   bash bench/duplicates.sh [ROWS] [ROUNDS] [SLUICE...]
#
# Against any server the PG* variables name (a throwaway one: the table
# `od` is dropped).
set -euo pipefail
rows=${1:-2000000}
rounds=${2:-5}
shift $(($# < 2 ? $# : 2))
binaries=("$@")
[ ${#binaries[@]} -gt 0 ] || binaries=(target/release/sluice)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

python3 - "$rows" "$dir" <<'EOF'
import random, sys
rows, dir = int(sys.argv[1]), sys.argv[2]
rng = random.Random(5)
originals = []
with open(f"{dir}/dups.tsv", "w") as dups, open(f"{dir}/clean.tsv", "w") as clean:
    for line in range(1, rows + 1):
        repeated = line > 1000 and rng.random() < 0.01
        key = rng.choice(originals) if repeated else line
        if not repeated:
            originals.append(line)
        row = f"{1700000000000 + line}\t{rng.randint(0, 99999) / 100:.2f}\t2024-{rng.randint(1, 12):02}-{rng.randint(1, 28):02}\tnote {line - 1}\n"
        dups.write(f"{key}\t{row}")
        if not repeated:
            clean.write(f"{key}\t{row}")
EOF

load() { # binary file
    psql -qX -c "TRUNCATE od; INSERT INTO od VALUES (-1, 0, 0, '2024-01-01', 'x'); CHECKPOINT"
    local start end
    start=$(date +%s.%N)
    "$1" load "$2" --table od --workers 2 --restart --quiet --rejects "$dir/od.rejects.jsonl" >/dev/null 2>&1 || [ $? -eq 1 ]
    end=$(date +%s.%N)
    local later
    later=$(psql -qAtX -c "SELECT count(*) FROM od WHERE note <> 'note ' || (id - 1) AND id <> -1")
    [ "$later" = 0 ] || { echo "$1: $later rows from a key's later line" >&2; kill -TERM $$; }
    echo "$(echo "$end - $start" | bc)"
}

psql -qX -c "DROP TABLE IF EXISTS od; CREATE TABLE od (id int PRIMARY KEY, ms bigint, amount numeric(12,2), day date, note text)"
for round in $(seq "$rounds"); do
    for binary in "${binaries[@]}"; do
        echo "round $round $binary duplicates $(load "$binary" "$dir/dups.tsv") s"
    done
    echo "round $round ${binaries[0]} clean $(load "${binaries[0]}" "$dir/clean.tsv") s"
done
psql -qX -c "DROP TABLE od"

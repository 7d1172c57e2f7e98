#!/usr/bin/env bash
# An export of changes: the table holds ROWS rows of (id int PRIMARY KEY,
# ms, amount, day, note) with ids 1..ROWS; the file holds ROWS lines with ids
# from ROWS * (1 - OVERLAP) + 1 on, so a share OVERLAP of its lines replace a
# row the table holds and the others are new. Each round puts the table back
# (TRUNCATE, the ROWS rows inserted again, VACUUM, CHECKPOINT) and loads the
# file:
#
#   psql    one psql session as by hand: \copy into a temporary table, then
#           INSERT ... SELECT DISTINCT ON (id) ... ON CONFLICT (id) DO UPDATE
#   sluice  sluice --on-conflict-do-update
#
# and prints each one's wall time and the rows that hold the file's values,
# checked against the file's distinct ids.
#
#   bash bench/upsert.sh [ROWS] [ROUNDS] [SLUICE]
#
# OVERLAP=0.5 by default. Against any server the PG* variables name (a
# throwaway one: the table `up` is dropped).
set -euo pipefail
rows=${1:-2000000}
rounds=${2:-3}
sluice=${3:-target/release/sluice}
overlap=${OVERLAP:-0.5}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

first=$(python3 -c "print(int($rows * (1 - $overlap)) + 1)")
python3 - "$rows" "$first" "$dir" <<'EOF'
import random, sys
rows, first, dir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rng = random.Random(5)
with open(f"{dir}/export.tsv", "w") as out:
    for id in range(first, first + rows):
        amount = f"{rng.randint(0, 99999) / 100:.2f}"
        out.write(f"{id}\t{1700000000000 + id}\t{amount}\t2024-{rng.randint(1, 12):02}-{rng.randint(1, 28):02}\tnote {id}\n")
EOF

reset() {
    psql -qX -c "TRUNCATE up" -c "INSERT INTO up SELECT g, 0, 0, '2024-01-01', 'held' FROM generate_series(1, $rows) g" \
        -c "VACUUM ANALYZE up" -c "CHECKPOINT"
}
psql -qX -c "DROP TABLE IF EXISTS up; CREATE TABLE up (id int PRIMARY KEY, ms bigint, amount numeric(12,2), day date, note text)"

timed() { # name command...
    local name=$1 start end applied
    shift
    reset
    start=$(date +%s.%N)
    "$@" >/dev/null 2>&1
    end=$(date +%s.%N)
    applied=$(psql -qAtX -c "SELECT count(*) FROM up WHERE note = 'note ' || id")
    echo "$name $(echo "$end - $start" | bc) s, $applied rows hold the file's values of $rows"
}

by_hand() {
    psql -qX -v ON_ERROR_STOP=1 <<SQL
CREATE TEMP TABLE staged (LIKE up);
\copy staged FROM '$dir/export.tsv'
INSERT INTO up SELECT DISTINCT ON (id) * FROM staged ORDER BY id
  ON CONFLICT (id) DO UPDATE SET ms = EXCLUDED.ms, amount = EXCLUDED.amount, day = EXCLUDED.day, note = EXCLUDED.note;
SQL
}

for round in $(seq "$rounds"); do
    echo "round $round $(timed psql by_hand)"
    echo "round $round $(timed sluice "$sluice" load "$dir/export.tsv" --table up --restart --quiet --on-conflict-do-update)"
done
psql -qX -c "DROP TABLE up"

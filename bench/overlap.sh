#!/usr/bin/env bash
# An export that overlaps the table: the table holds ROWS rows of (id int
# PRIMARY KEY, ms, amount, day, note) with ids 1..ROWS; the file holds ROWS
# lines with ids from ROWS * (1 - OVERLAP) + 1 on, so a share OVERLAP of its
# lines repeat a key the table holds. Each round puts the table back (the
# rows the last load added deleted, VACUUM, CHECKPOINT) and loads the file:
#
#   psql   one psql session as by hand: \copy into a temporary table, then
#          INSERT ... SELECT ... ON CONFLICT DO NOTHING
#   skip   sluice --on-conflict-do-nothing
#   reject sluice as it is (the repeats rejected into a rejects file;
#          --max-errors lets it go on past the first 1,000)
#
# and prints each one's wall time and the rows it added, checked against
# the new keys of the file.
#
#   bash bench/overlap.sh [ROWS] [ROUNDS] [SLUICE]
#
# OVERLAP=0.5 by default. Against any server the PG* variables name (a
# throwaway one: the table `ov` is dropped).
set -euo pipefail
rows=${1:-2000000}
rounds=${2:-5}
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
        out.write(f"{id}\t{1700000000000 + id}\t{rng.randint(0, 99999) / 100:.2f}\t2024-{rng.randint(1, 12):02}-{rng.randint(1, 28):02}\tnote {id}\n")
EOF
new=$((first + rows - 1 - rows))
[ "$new" -ge 0 ] || new=0

psql -qX -c "DROP TABLE IF EXISTS ov; CREATE TABLE ov (id int PRIMARY KEY, ms bigint, amount numeric(12,2), day date, note text); \
    INSERT INTO ov SELECT g, 0, 0, '2024-01-01', 'held' FROM generate_series(1, $rows) g" -c "VACUUM ANALYZE ov"

reset() {
    psql -qX -c "DELETE FROM ov WHERE id > $rows" -c "VACUUM ov" -c "CHECKPOINT"
}

timed() { # name command...
    local name=$1 start end added
    shift
    reset
    start=$(date +%s.%N)
    "$@" >/dev/null 2>&1 || [ $? -eq 1 ]
    end=$(date +%s.%N)
    added=$(psql -qAtX -c "SELECT count(*) FROM ov WHERE id > $rows AND note = 'note ' || id")
    echo "$name $(echo "$end - $start" | bc) s, added $added of $new"
}

by_hand() {
    psql -qX -v ON_ERROR_STOP=1 <<SQL
CREATE TEMP TABLE staged (LIKE ov);
\copy staged FROM '$dir/export.tsv'
INSERT INTO ov SELECT * FROM staged ON CONFLICT DO NOTHING;
SQL
}

for round in $(seq "$rounds"); do
    echo "round $round $(timed psql by_hand)"
    echo "round $round $(timed skip "$sluice" load "$dir/export.tsv" --table ov --restart --quiet --on-conflict-do-nothing)"
    echo "round $round $(timed reject "$sluice" load "$dir/export.tsv" --table ov --restart --quiet \
        --max-errors "$rows" --rejects "$dir/ov.rejects.jsonl")"
done
psql -qX -c "DROP TABLE ov"

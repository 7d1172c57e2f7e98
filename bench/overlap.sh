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
# OVERLAP=0.5 by default. BAD_EVERY=N writes `x` for the amount of every
# Nth line, a value the column cannot take (psql's staging table then stops
# at the first; sluice rejects them at their lines). Against any server the
# PG* variables name (a throwaway one: the table `ov` is dropped).
set -euo pipefail
rows=${1:-2000000}
rounds=${2:-5}
sluice=${3:-target/release/sluice}
overlap=${OVERLAP:-0.5}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

first=$(python3 -c "print(int($rows * (1 - $overlap)) + 1)")
new=$(python3 - "$rows" "$first" "$dir" "${BAD_EVERY:-0}" <<'EOF'
import random, sys
rows, first, dir, bad_every = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
rng = random.Random(5)
new = 0
with open(f"{dir}/export.tsv", "w") as out:
    for line, id in enumerate(range(first, first + rows), start=1):
        amount = f"{rng.randint(0, 99999) / 100:.2f}"
        if bad_every and line % bad_every == 0:
            amount = "x"
        elif id > rows:
            new += 1
        out.write(f"{id}\t{1700000000000 + id}\t{amount}\t2024-{rng.randint(1, 12):02}-{rng.randint(1, 28):02}\tnote {id}\n")
print(new)
EOF
)

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
    local rc=0
    "$@" >/dev/null 2>&1 || rc=$?
    # sluice: 1 with rejects; psql stops at a bad line (BAD_EVERY).
    [ "$rc" -le 1 ] || [ "$name" = psql ]
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

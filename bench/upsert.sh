#!/usr/bin/env bash
# An export of changes: the table holds ROWS rows of (id int PRIMARY KEY,
# ms, amount, day, note) with ids 1..ROWS; the file holds ROWS lines with ids
# from ROWS * (1 - OVERLAP) + 1 on, so a share OVERLAP of its lines replace a
# row the table holds and the others are new. Each round puts the table back
# (TRUNCATE, the ROWS rows inserted again, VACUUM, CHECKPOINT) and loads the
# file:
#
#   psql    one psql session as by hand: \copy into a temporary table, then
#           INSERT ... SELECT ... ON CONFLICT (id) DO UPDATE
#   sluice  sluice --on-conflict-do-update
#
# and prints each one's wall time and the rows that hold the last values
# the file gives their id, checked against the file's distinct ids.
#
#   bash bench/upsert.sh [ROWS] [ROUNDS] [SLUICE]
#
# OVERLAP=0.5 by default. REPEAT_EVERY=N: every Nth line repeats the id of
# the line before it (the later line's values must stay), and psql's way
# numbers the staged rows to keep each id's last (DISTINCT ON (id) ...
# ORDER BY id, n DESC), without which the INSERT is refused (`cannot affect
# row a second time`). Against any server the PG* variables name (a
# throwaway one: the table `up` is dropped). FILES=N: the export split into
# N files by lines (a folder of change files), which sluice loads as a glob
# and psql's way copies from `cat` of them all.
set -euo pipefail
rows=${1:-2000000}
rounds=${2:-3}
sluice=${3:-target/release/sluice}
overlap=${OVERLAP:-0.5}
repeat_every=${REPEAT_EVERY:-0}
files=${FILES:-1}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

first=$(python3 -c "print(int($rows * (1 - $overlap)) + 1)")
distinct=$(python3 - "$rows" "$first" "$dir" "$repeat_every" <<'PY'
import random, sys
rows, first, dir, every = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
rng = random.Random(5)
ids = set()
with open(f"{dir}/export.tsv", "w") as out:
    for line in range(1, rows + 1):
        id = first + line - 1 - (1 if every and line % every == 0 else 0)
        ids.add(id)
        amount = f"{rng.randint(0, 99999) / 100:.2f}"
        out.write(f"{id}\t{1700000000000 + id}\t{amount}\t2024-{rng.randint(1, 12):02}-{rng.randint(1, 28):02}\tnote {line}\n")
print(len(ids))
PY
)

input="$dir/export.tsv"
copy_from="'$input'"
if [ "$files" -gt 1 ]; then
    split -n "l/$files" -d -a 6 --additional-suffix .tsv "$input" "$dir/part_"
    rm "$input"
    input="$dir/part_*.tsv"
    copy_from="PROGRAM 'cat $input'"
fi

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
    # The last line of id I is line I - first + 1, or the line after it
    # where that one repeats I.
    applied=$(psql -qAtX -c "SELECT count(*) FROM up WHERE note = 'note ' || CASE \
        WHEN $repeat_every > 0 AND (id - $first + 2) % $repeat_every = 0 THEN id - $first + 2 ELSE id - $first + 1 END")
    echo "$name $(echo "$end - $start" | bc) s, $applied rows hold the last values of the file's $distinct ids"
}

by_hand() {
    local from="staged" number=""
    if [ "$repeat_every" -gt 0 ]; then
        number="ALTER TABLE staged ADD COLUMN n bigserial;"
        from="(SELECT DISTINCT ON (id) id, ms, amount, day, note FROM staged ORDER BY id, n DESC) s"
    fi
    psql -qX -v ON_ERROR_STOP=1 <<SQL
CREATE TEMP TABLE staged (LIKE up);
$number
\copy staged (id, ms, amount, day, note) FROM $copy_from
INSERT INTO up SELECT id, ms, amount, day, note FROM $from
  ON CONFLICT (id) DO UPDATE SET ms = EXCLUDED.ms, amount = EXCLUDED.amount, day = EXCLUDED.day, note = EXCLUDED.note;
SQL
}

for round in $(seq "$rounds"); do
    echo "round $round $(timed psql by_hand)"
    echo "round $round $(timed sluice "$sluice" load "$input" --table up --restart --quiet --on-conflict-do-update)"
done
psql -qX -c "DROP TABLE up"

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
# KEY=timestamptz keys the rows by a time (`2023-11-14 22:13:21+00`, a
# second per line) instead of an integer. RATE=0.0001 repeats one line in
# 10,000 instead (sparse: the workers never take turns, and chunks loading
# at once commit in input order). Each binary also loads the clean rows.
#
# Against any server the PG* variables name (a throwaway one: the table
# `od` is dropped).
set -euo pipefail
rows=${1:-2000000}
rounds=${2:-5}
shift $(($# < 2 ? $# : 2))
binaries=("$@")
key=${KEY:-int}
rate=${RATE:-0.01}
case $key in
    int) id_type=int; first_line="(id - 1)"; lowest=-1 ;;
    timestamptz) id_type=timestamptz; first_line="(extract(epoch FROM id)::bigint - 1700000000 - 1)"; lowest="'2023-11-14 22:13:19+00'" ;;
    *) echo "KEY: int or timestamptz" >&2; exit 2 ;;
esac
[ ${#binaries[@]} -gt 0 ] || binaries=(target/release/sluice)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

python3 - "$rows" "$dir" "$key" "$rate" <<'EOF'
import datetime, random, sys
rows, dir, key_type, rate = int(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
epoch = datetime.datetime(1970, 1, 1)
def written(key):
    if key_type == "int":
        return str(key)
    return (epoch + datetime.timedelta(seconds=1700000000 + key)).strftime("%Y-%m-%d %H:%M:%S+00")
rng = random.Random(5)
originals = []
with open(f"{dir}/dups.tsv", "w") as dups, open(f"{dir}/clean.tsv", "w") as clean:
    for line in range(1, rows + 1):
        repeated = line > 1000 and rng.random() < rate
        key = rng.choice(originals) if repeated else line
        if not repeated:
            originals.append(line)
        row = f"{1700000000000 + line}\t{rng.randint(0, 99999) / 100:.2f}\t2024-{rng.randint(1, 12):02}-{rng.randint(1, 28):02}\tnote {line - 1}\n"
        dups.write(f"{written(key)}\t{row}")
        if not repeated:
            clean.write(f"{written(key)}\t{row}")
EOF

load() { # binary file
    psql -qX -c "TRUNCATE od; INSERT INTO od VALUES ($lowest, 0, 0, '2024-01-01', 'x'); CHECKPOINT"
    local start end
    start=$(date +%s.%N)
    "$1" load "$2" --table od --workers 2 --restart --quiet --rejects "$dir/od.rejects.jsonl" >/dev/null 2>&1 || [ $? -eq 1 ]
    end=$(date +%s.%N)
    local later
    later=$(psql -qAtX -c "SELECT count(*) FROM od WHERE note <> 'note ' || $first_line AND note <> 'x'")
    echo "$(echo "$end - $start" | bc) s, $later rows from a key's later line"
}

psql -qX -c "DROP TABLE IF EXISTS od; CREATE TABLE od (id $id_type PRIMARY KEY, ms bigint, amount numeric(12,2), day date, note text)"
for round in $(seq "$rounds"); do
    for binary in "${binaries[@]}"; do
        echo "round $round $binary duplicates $(load "$binary" "$dir/dups.tsv")"
        echo "round $round $binary clean $(load "$binary" "$dir/clean.tsv")"
    done
done
psql -qX -c "DROP TABLE od"

#!/usr/bin/env python3
"""End-to-end benchmark: sluice against psql \\copy and a hand split, in one run.

Starts a throwaway PostgreSQL tuned with shared/bench/postgresql.bulkload.conf
(the settings the peers' reference figures were measured with; WAL files written
once beforehand and kept, min_wal_size), generates the datasets, and loads each
one, after a load by psql that is not counted, with every loader in interleaved
rounds. For every run it records wall time, the loader's CPU seconds and peak
RSS (wait4), and the server's CPU seconds (postmaster + reaped backends, from
/proc). It checks the loaded row count after every run, so a broken path cannot
look fast, and reports medians and ratios to psql \\copy from the same run.

    python3 bench/bench.py                       # all datasets, 3 rounds
    python3 bench/bench.py --datasets transactions --rounds 5
    python3 bench/bench.py --rss                 # also peak RSS, 8 workers, 5 GB input
    python3 bench/bench.py --datasets transactions-paths --wal-level minimal --write-mbps 100
                                                 # fresh-table paths on an emulated slow disk (root)
    python3 bench/bench.py --socket              # every loader over the Unix socket, not 127.0.0.1
    python3 bench/bench.py --summarize bench/results/raw-2026-11-22-0110.csv
                                                 # an earlier run's summary, with today's columns
    python3 bench/bench.py --history 2026-11-24  # how often issue 5's targets held in the runs since

Not a test: nothing here runs in CI. Results go to bench/results/.
"""
import argparse
import atexit
import csv
import os
import pwd
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SLUICE = ROOT / "target" / "release" / "sluice"
DATA = ROOT / "bench" / "data"
RESULTS = ROOT / "bench" / "results"
CONF = ROOT.parent / "shared" / "bench" / "postgresql.bulkload.conf"
TICK = os.sysconf("SC_CLK_TCK")
# --sync-on: the server keeps synchronous_commit = on (the bench conf turns it
# off), to measure what sluice's own per-session setting is worth.
SYNC_ON = False
# --pg-bindir: another PostgreSQL's server binaries (default: Debian's).
PG_BINDIR = None
# --wal-level: the server's wal_level (minimal lets COPY FREEZE skip WAL).
WAL_LEVEL = None
# --write-mbps: the server's writes to its disk throttled to this many MB/s.
WRITE_MBPS = None
# --socket: every loader connects over the server's Unix socket, not 127.0.0.1.
SOCKET = False

LINEITEM_DDL = """CREATE TABLE lineitem (l_orderkey bigint NOT NULL, l_partkey bigint NOT NULL,
 l_suppkey bigint NOT NULL, l_linenumber integer NOT NULL, l_quantity numeric(15,2) NOT NULL,
 l_extendedprice numeric(15,2) NOT NULL, l_discount numeric(15,2) NOT NULL, l_tax numeric(15,2) NOT NULL,
 l_returnflag char(1) NOT NULL, l_linestatus char(1) NOT NULL, l_shipdate date NOT NULL,
 l_commitdate date NOT NULL, l_receiptdate date NOT NULL, l_shipinstruct char(25) NOT NULL,
 l_shipmode char(10) NOT NULL, l_comment varchar(44) NOT NULL)"""

# name: (file, table, rows, psql \copy options, sluice format arguments)
DATASETS = {
    "transactions": ("transactions.tsv", "transactions", 10_000_000, "", ["--format", "tsv"]),
    "lineitem": ("lineitem.psv", "lineitem", 6_001_215, "with (delimiter '|')",
                 ["--format", "tsv", "--delimiter", "|"]),
    "cname": ("cname.jsonl", "cname", 5_000_000, "with (format csv, quote e'\\x01', delimiter e'\\x02')",
              ["--format", "jsonl"]),
    # The same documents into typed columns: against the hand workflow
    # (psql \copy into an UNLOGGED jsonb staging table, then INSERT ...
    # SELECT with ->> casts), which stands in psql's row; not in the default run.
    "cname-typed": ("cname.jsonl", "cname_typed", 5_000_000, "with (format csv, quote e'\\x01', delimiter e'\\x02')",
                    ["--format", "jsonl"]),
    # The table with a primary key and two secondary indexes (issue 5).
    "transactions-indexed": ("transactions.tsv", "transactions", 10_000_000, "", ["--format", "tsv"]),
    # The same table partitioned by range on tid (two partitions), with a
    # primary key and an index; not in the default run.
    "transactions-partitioned": ("transactions.tsv", "transactions", 10_000_000, "", ["--format", "tsv"]),
    # The fresh-table paths: the same load with FREEZE, --unlogged and the defaults.
    "transactions-paths": ("transactions.tsv", "transactions", 10_000_000, "", ["--format", "tsv"]),
    # pgloader is 16-23x slower than psql here: it loads the first million
    # rows only, against psql \copy and sluice on the same prefix.
    "transactions-1m": ("transactions-1m.tsv", "transactions", 1_000_000, "", ["--format", "tsv"]),
    "lineitem-1m": ("lineitem-1m.psv", "lineitem", 1_000_000, "with (delimiter '|')",
                    ["--format", "tsv", "--delimiter", "|"]),
    # The same rows as 3,854 files of 100 kB (a folder), loaded by a glob:
    # psql \copy reads them all through `cat`, the hand split in two halves.
    "transactions-files": ("transactions-files", "transactions", 10_000_000, "", ["--format", "tsv"]),
}
INDEXES = {"transactions-indexed": "ALTER TABLE transactions ADD PRIMARY KEY (tid); "
                                   "CREATE INDEX ON transactions (mssinceunixepoch); "
                                   "CREATE INDEX ON transactions (amount)",
           "transactions-partitioned": "ALTER TABLE transactions ADD PRIMARY KEY (tid); "
                                       "CREATE INDEX ON transactions (amount)"}
PARTITIONS = {"transactions-partitioned": " PARTITION BY RANGE (tid); "
              "CREATE TABLE transactions_low PARTITION OF transactions FOR VALUES FROM (MINVALUE) TO (5000000); "
              "CREATE TABLE transactions_high PARTITION OF transactions FOR VALUES FROM (5000000) TO (MAXVALUE)"}
PGLOADER_DELIMITER = {"transactions-1m": "\\t", "lineitem-1m": "|"}
TYPED_DDL = {"cname-typed": 'CREATE TABLE cname_typed ("timestamp" bigint, name text, type text, value text); '
                            "DROP TABLE IF EXISTS cname_stage; CREATE UNLOGGED TABLE cname_stage (doc jsonb)"}
HAND_INSERT = {"cname-typed": "INSERT INTO cname_typed SELECT (doc->>'timestamp')::bigint, doc->>'name', "
                              "doc->>'type', doc->>'value' FROM cname_stage"}


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


class Server:
    """A bulk-load-tuned PostgreSQL in a temporary folder, on 127.0.0.1."""

    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="sluice-bench-"))
        self.port = 54000 + os.getpid() % 1000
        bindir = Path(PG_BINDIR or subprocess.run(["pg_config", "--bindir"], capture_output=True,
                                                  text=True).stdout.strip())
        if not (bindir / "initdb").exists():
            bindir = sorted(Path("/usr/lib/postgresql").glob("*/bin"))[-1]
        self.bindir = bindir
        self.user = None
        if os.geteuid() == 0:
            self.user = pwd.getpwnam("nobody")
            os.chown(self.dir, self.user.pw_uid, self.user.pw_gid)
        self.run_as([str(bindir / "initdb"), "-D", str(self.dir / "data"), "-U", "bench", "-E", "UTF8",
                     "--no-locale", "--auth-local=trust", "--auth-host=trust"], stdout=subprocess.DEVNULL)
        with open(self.dir / "data" / "postgresql.conf", "a") as conf:
            conf.write("\n" + CONF.read_text())
            if SYNC_ON:
                conf.write("\nsynchronous_commit = on\n")
            if WAL_LEVEL:
                conf.write(f"\nwal_level = {WAL_LEVEL}\nmax_wal_senders = 0\n")
        self.run_as([str(bindir / "pg_ctl"), "-D", str(self.dir / "data"), "-l", str(self.dir / "log"), "-w",
                     "-o", f"-k {self.dir} -p {self.port} -c listen_addresses=127.0.0.1", "start"],
                    stdout=subprocess.DEVNULL)
        self.pid = int((self.dir / "data" / "postmaster.pid").read_text().split()[0])
        if WRITE_MBPS:
            throttle_writes(self.dir, [self.pid, *children(self.pid)], WRITE_MBPS)
        self.env = dict(os.environ, PGHOST=str(self.dir) if SOCKET else "127.0.0.1", PGPORT=str(self.port),
                        PGUSER="bench", PGDATABASE="postgres")

    def run_as(self, cmd, **kw):
        if self.user:
            uid, gid = self.user.pw_uid, self.user.pw_gid
            kw["preexec_fn"] = lambda: (os.setgroups([]), os.setgid(gid), os.setuid(uid))
        sh(cmd, **kw)

    def psql(self, sql):
        out = sh(["psql", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-c", sql], env=self.env,
                 capture_output=True, text=True)
        return out.stdout.strip()

    def cpu_seconds(self):
        """Postmaster (with its reaped children) plus live children, in seconds."""
        total = 0
        for pid, fields in processes():
            ppid = int(fields[1])
            if pid == self.pid:
                total += sum(int(f) for f in fields[11:15])
            elif ppid == self.pid:
                total += int(fields[11]) + int(fields[12])
        return total / TICK

    def stop(self):
        self.run_as([str(self.bindir / "pg_ctl"), "-D", str(self.dir / "data"), "-m", "fast", "stop"],
                    stdout=subprocess.DEVNULL)
        shutil.rmtree(self.dir, ignore_errors=True)


def processes():
    """(pid, the fields of /proc/PID/stat after the command name) of every
    live process."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            yield int(stat.parent.name), stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue


def children(pid):
    """The live children of `pid`."""
    return [child for child, fields in processes() if int(fields[1]) == pid]


def throttle_writes(folder, pids, mbps):
    """An emulated slow disk: moves `pids` (the postmaster and its children;
    later backends inherit it) into a cgroup whose writes to the disk under
    `folder` are throttled to `mbps` MB/s (cgroup v1 blkio or v2 io.max; root
    only). What is throttled is what the server writes and fsyncs itself
    (WAL, checkpoints, a COPY FREEZE commit's fsync); writeback the kernel
    starts on its own after 30 s is not, so this is a lower bound on a slow
    disk's cost."""
    dev = os.stat(folder).st_dev
    block = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    if (block / "partition").exists():
        block = block.resolve().parent
    device = (block / "dev").read_text().strip()
    limit = int(mbps * 1e6)
    v1, v2 = Path("/sys/fs/cgroup/blkio"), Path("/sys/fs/cgroup")
    if v1.is_dir():
        group = v1 / "sluice-bench-slow"
        group.mkdir(exist_ok=True)
        (group / "blkio.throttle.write_bps_device").write_text(f"{device} {limit}\n")
    else:
        (v2 / "cgroup.subtree_control").write_text("+io\n")
        group = v2 / "sluice-bench-slow"
        group.mkdir(exist_ok=True)
        (group / "io.max").write_text(f"{device} wbps={limit}\n")
    for pid in pids:
        (group / "cgroup.procs").write_text(f"{pid}\n")
    atexit.register(lambda: group.rmdir() if not (group / "cgroup.procs").read_text().strip() else None)
    print(f"server writes throttled to {mbps} MB/s on device {device}", flush=True)


def peak_rss_kb(pids, stop):
    """Samples VmHWM (peak RSS of the process's own memory map) until stop.
    ru_maxrss cannot be used: Linux carries the forking Python's peak into
    every child across exec."""
    peak = [0]

    def sample():
        while not stop.is_set():
            for pid in pids:
                try:
                    for line in open(f"/proc/{pid}/status"):
                        if line.startswith("VmHWM:"):
                            peak[0] = max(peak[0], int(line.split()[1]))
                except OSError:
                    pass
            time.sleep(0.02)

    thread = threading.Thread(target=sample)
    thread.start()
    return thread, peak


def run_measured(cmds, env):
    """Runs commands concurrently; returns wall seconds, client CPU, peak RSS MB."""
    start = time.perf_counter()
    procs = [subprocess.Popen(list(map(str, c)), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
             for c in cmds]
    stop = threading.Event()
    sampler, peak = peak_rss_kb([p.pid for p in procs], stop)
    cpu = 0.0
    for p in procs:
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        err = p.stderr.read().decode() if p.returncode else ""
        if p.returncode != 0:
            sys.exit(f"loader failed: {' '.join(map(str, p.args))}\n{err}")
        cpu += usage.ru_utime + usage.ru_stime
    wall = time.perf_counter() - start
    stop.set()
    sampler.join()
    return wall, cpu, peak[0] / 1024


def prepare_data(names, scale_rows):
    DATA.mkdir(parents=True, exist_ok=True)
    for name in names:
        file, table, rows, _, _ = DATASETS[name]
        path = DATA / file
        if path.exists():
            continue
        print(f"generating {path.name}", flush=True)
        if name == "transactions-files":
            prepare_data(["transactions"], None)
            path.mkdir()
            sh(["split", "-C", "100K", "-d", "-a", "5", "--additional-suffix=.tsv",
                str(DATA / DATASETS["transactions"][0]), str(path / "part-")])
        elif name.endswith("-1m"):
            full = name.removesuffix("-1m")
            prepare_data([full], None)
            sh(f"head -n {rows} {DATA / DATASETS[full][0]} > {path}", shell=True)
        elif name == "lineitem":
            sh(["tpchgen-cli", "-s", "1", "--tables", "lineitem", "--output-dir", str(DATA)])
            # dbgen's trailing '|' would be an extra empty column for COPY.
            sh(f"sed 's/|$//' {DATA / 'lineitem.tbl'} > {path} && rm {DATA / 'lineitem.tbl'}", shell=True)
        else:
            sh([str(SLUICE), "gen", name.split("-")[0], "--rows", str(rows), "-o", str(path)])


def ddl(name):
    if name in TYPED_DDL:
        return TYPED_DDL[name]
    base = name.split("-")[0]
    if base == "lineitem":
        return LINEITEM_DDL
    out = sh([str(SLUICE), "gen", base, "--ddl"], capture_output=True, text=True)
    table = out.stdout.strip().rstrip(";") + PARTITIONS.get(name, "")
    return table + ";" + INDEXES.get(name, "")


def pgloader_command(name, server, path):
    """A pgloader command file (its best setting here: 2 workers, 2 readers,
    25,000-row batches), or None when pgloader is not installed."""
    if not shutil.which("pgloader"):
        return None
    table = DATASETS[name][1]
    spec = server.dir / f"{name}.load"
    spec.write_text(f"LOAD CSV FROM '{path}' INTO postgresql://bench@127.0.0.1:{server.port}/postgres "
                    f"TARGET TABLE {table} WITH fields terminated by '{PGLOADER_DELIMITER[name]}', "
                    f"fields not enclosed, workers = 2, concurrency = 2, batch rows = 25000;\n")
    return ["pgloader", "--quiet", str(spec)]


def loaders(name, server, parts_dir):
    file, table, rows, opts, fmt = DATASETS[name]
    path = DATA / file
    copy = lambda f: ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", f"\\copy {table} from '{f}' {opts}"]
    halves = sorted(parts_dir.glob(f"{name}-part-*"))
    out = {"psql \\copy": [copy(path)]}
    # --analyze no: psql \copy and the peers leave the table unanalyzed, and
    # the benchmark's server has autovacuum off, where sluice would analyze
    # it by default (0.2-0.4 s on these datasets, measured apart).
    sluice = [str(SLUICE), "load", "--restart", str(path), "--table", table, "--quiet", *fmt, "--analyze", "no"]
    if path.is_dir():
        files = sorted(str(f) for f in path.glob("*.tsv"))
        cat = lambda fs: ["sh", "-c", f"cat \"$@\" | psql -X -q -v ON_ERROR_STOP=1 -c '\\copy {table} from stdin'",
                          "sh", *fs]
        half = len(files) // 2
        out = {"psql \\copy": [cat(files)], "split 2 x psql": [cat(files[:half]), cat(files[half:])]}
        out["sluice"] = [[*sluice[:3], str(path / "*.tsv"), *sluice[4:]]]
        out["sluice, one file"] = [[*sluice[:3], str(DATA / DATASETS["transactions"][0]), *sluice[4:]]]
        return out
    if name == "transactions-paths":
        # One transaction that empties the table and loads it FREEZE (WAL
        # skipped under wal_level = minimal), against sluice's defaults
        # (chunks commit on their own) and --unlogged.
        freeze = copy(path)[:-2] + ["-c", "BEGIN", "-c", f"TRUNCATE {table}",
                                    "-c", f"\\copy {table} from '{path}' with (freeze)", "-c", "COMMIT"]
        out["psql TRUNCATE + COPY FREEZE"] = [freeze]
        out["sluice"] = [sluice]
        out["sluice --unlogged"] = [[*sluice, "--unlogged"]]
        return out
    if name in HAND_INSERT:
        # psql alone cannot take documents apart: the staging workflow users
        # write by hand is psql's row, and sluice loads the columns itself.
        stage = copy(path)[:-2] + ["-c", f"\\copy cname_stage from '{path}' {opts}", "-c", HAND_INSERT[name]]
        return {"psql \\copy": [stage], "sluice": [sluice]}
    if name in PGLOADER_DELIMITER:
        pgloader = pgloader_command(name, server, path)
        if pgloader:
            out["pgloader"] = [pgloader]
        out["sluice"] = [sluice]
        return out
    out["split 2 x psql"] = [copy(h) for h in halves]
    if name in INDEXES:
        # Defaults (indexes deferred: the table is empty) and kept in place.
        out["sluice"] = [sluice]
        out["sluice keep indexes"] = [[*sluice, "--defer-indexes", "no"]]
        return out
    # The defaults (--workers auto, --copy-format auto, --chunk-size auto).
    out["sluice"] = [sluice]
    # The defaults go through the server's Unix socket; this is the same
    # load over 127.0.0.1, as every other loader here connects.
    out["sluice --keep-tcp"] = [[*sluice, "--keep-tcp"]]
    for w in (1, 2, 4):
        out[f"sluice w{w}"] = [[*sluice, "--workers", str(w)]]
    # What --copy-format auto chose against: both formats forced, 2 workers.
    for copy_format in ("text", "binary"):
        out[f"sluice w2 {copy_format}"] = [[*sluice, "--workers", "2", "--copy-format", copy_format]]
    return out


# WAL the server keeps for reuse between loads (min_wal_size), written once
# before the first one: see warm_wal.
WARM_WAL_MB = 4096


def warm_wal(server):
    """Gives the server WAL files to reuse, as many as the largest load here
    writes (transactions-indexed: 2.5 GB), before the first measured load.
    Otherwise the first loads of a run create and zero-fill new 16 MB files
    while later ones reuse them (the server keeps about twice the recent
    checkpoints' distance, a moving average that grows with each load): in
    the forty-ninth session's run every loader's round 0 was its slowest,
    lineitem by psql 17.5 s against 13.5 and 13.4, sluice 7.5 s against 6.5
    and 5.4. min_wal_size keeps the files through each CHECKPOINT; what the
    doctor advises for bulk loads (1GB or more)."""
    server.psql(f"ALTER SYSTEM SET min_wal_size = '{WARM_WAL_MB}MB'")
    server.psql("SELECT pg_reload_conf()")
    start = server.psql("SELECT pg_current_wal_lsn()")
    server.psql("CREATE TABLE sluice_bench_warm (g int, pad text)")
    written = 0
    while written < (WARM_WAL_MB + 128) * 1e6:
        server.psql("INSERT INTO sluice_bench_warm SELECT g, repeat('w', 200) FROM generate_series(1, 2000000) g")
        written = float(server.psql(f"SELECT pg_current_wal_lsn() - '{start}'::pg_lsn"))
    server.psql("DROP TABLE sluice_bench_warm")
    server.psql("CHECKPOINT")
    server.psql("CHECKPOINT")
    print(f"WAL warmed: {written / 1e6:.0f} MB written, kept for reuse (min_wal_size = {WARM_WAL_MB}MB)", flush=True)


def read_once(*paths):
    """Reads the dataset's files (and the hand split's parts) into the page
    cache, so the first loader of round 0 does not read them from the disk
    while the others read memory (round 0 of lineitem's psql: 17.5 s against
    13.5 s in the forty-ninth session's first run)."""
    for path in paths:
        files = sorted(path.iterdir()) if path.is_dir() else [path]
        for f in files:
            if f.is_file():
                with open(f, "rb") as data:
                    while data.read(1 << 20):
                        pass


def warm_up(server, name, psql):
    """One load of the dataset by `psql`, not measured. With the files in the
    page cache and the WAL files written beforehand, round 0 was still the
    slowest of psql's three (transactions 6.51 s against 5.24 and 5.51 in
    the forty-ninth session's third run), and psql starts round 0: its
    median was then the slower of the other two, to sluice's advantage."""
    table = DATASETS[name][1]
    server.psql(f"DROP TABLE IF EXISTS {table}")
    server.psql(ddl(name))
    wall, _, _ = run_measured(psql, server.env)
    server.psql(f"DROP TABLE {table}")
    server.psql("CHECKPOINT")
    print(f"{name:13} warm-up load by psql \\copy (not counted): {wall:.2f} s", flush=True)


def bench(names, rounds):
    server = Server()
    version = server.psql("SHOW server_version")
    warm_wal(server)
    parts_dir = Path(tempfile.mkdtemp(prefix="sluice-bench-parts-"))
    raw = []
    try:
        for name in names:
            file, table, rows, _, _ = DATASETS[name]
            if (DATA / file).is_dir():
                size = sum(f.stat().st_size for f in (DATA / file).iterdir())
            else:
                sh(["split", "-n", "l/2", "-d", str(DATA / file), str(parts_dir / f"{name}-part-")])
                size = (DATA / file).stat().st_size
            read_once(DATA / file, *parts_dir.glob(f"{name}-part-*"))
            warm_up(server, name, loaders(name, server, parts_dir)["psql \\copy"])
            for r in range(rounds):
                for label, cmds in rotated(list(loaders(name, server, parts_dir).items()), r, rounds):
                    server.psql(f"DROP TABLE IF EXISTS {table}")
                    server.psql(ddl(name))
                    server.psql("CHECKPOINT")
                    time.sleep(0.3)
                    before, lsn = server.cpu_seconds(), server.psql("SELECT pg_current_wal_lsn()")
                    wall, cpu, rss = run_measured(cmds, server.env)
                    time.sleep(0.5)
                    server_cpu = server.cpu_seconds() - before
                    wal = int(float(server.psql(f"SELECT pg_current_wal_lsn() - '{lsn}'::pg_lsn")))
                    started = time.perf_counter()
                    server.psql("CHECKPOINT")
                    checkpoint = time.perf_counter() - started
                    count = int(server.psql(f"SELECT count(*) FROM {table}"))
                    assert count == rows, f"{label} loaded {count} rows of {name}, expected {rows}"
                    raw.append(dict(server=version, dataset=name, loader=label, round=r, wall_s=wall, rows=rows,
                                    bytes=size, client_cpu_s=cpu, server_cpu_s=server_cpu, peak_rss_mb=rss,
                                    wal_mb=wal / 1e6, checkpoint_s=checkpoint))
                    print(f"{name:13} {label:15} round {r}: {wall:6.2f} s  client {cpu:5.2f} s  "
                          f"server {server_cpu:6.2f} s  rss {rss:6.1f} MB  WAL {wal / 1e6:7.0f} MB  "
                          f"checkpoint {checkpoint:5.2f} s", flush=True)
            server.psql(f"DROP TABLE {table}")
    finally:
        server.stop()
        shutil.rmtree(parts_dir, ignore_errors=True)
    return raw


def rotated(items, r, rounds):
    """The loaders in round `r`, each starting the round at another place:
    a loader's place in the round changed its time (on PostgreSQL 18 the row
    after the hand split beat the same command two rows later in every round
    of a fixed order, and lost to it alternating by hand), so no loader keeps
    one place for all its rounds."""
    shift = r * max(1, len(items) // rounds) % max(1, len(items))
    return items[shift:] + items[:shift]


def summarize(raw, cores=os.cpu_count(), warmed=False):
    setup = "".join([f", wal_level = {WAL_LEVEL}" if WAL_LEVEL else "",
                     f", server writes throttled to {WRITE_MBPS} MB/s" if WRITE_MBPS else "",
                     ", every loader over the Unix socket" if SOCKET else ""])
    warm = (f", WAL files reused (min_wal_size = {WARM_WAL_MB}MB, written once before the first load), "
            "each dataset loaded once by psql first, not counted") if warmed else ""
    lines = [f"PostgreSQL {raw[0]['server']} (server){setup}{warm}, medians of {1 + max(r['round'] for r in raw)} rounds",
             "",
             "| dataset | loader | wall s (median) | rows/s | MB/s | x psql \\copy | server CPU s | client CPU s | "
             "client CPU / server CPU | cores busy | CPU-bound best x psql | WAL MB | checkpoint s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name in dict.fromkeys(r["dataset"] for r in raw):
        runs = [r for r in raw if r["dataset"] == name]
        med = lambda label, key: statistics.median(r[key] for r in runs if r["loader"] == label)
        base = med("psql \\copy", "wall_s")
        for label in dict.fromkeys(r["loader"] for r in runs):
            wall = med(label, "wall_s")
            rows, size = runs[0]["rows"], runs[0]["bytes"]
            s_cpu, c_cpu = med(label, "server_cpu_s"), med(label, "client_cpu_s")
            lines.append(f"| {name} | {label} | {wall:.2f} | {rows / wall / 1e6:.2f} M | {size / wall / 1e6:.0f} | "
                         f"{base / wall:.2f}x | {s_cpu:.1f} | {c_cpu:.2f} | {100 * c_cpu / s_cpu:.1f} % | "
                         f"{100 * (s_cpu + c_cpu) / (cores * wall):.0f} % | {base * cores / (s_cpu + c_cpu):.2f}x | "
                         f"{med(label, 'wal_mb'):.0f} | {med(label, 'checkpoint_s'):.2f} |")
    lines += ["", f"cores busy: (server + client CPU) / ({cores} cores x wall). CPU-bound best: psql \\copy's wall "
              f"over the shortest wall this loader's CPU seconds allow on {cores} cores, each kept busy: "
              "a ratio beyond it needs less CPU, not better scheduling."]
    return "\n".join(lines)


def read_raw(path):
    """An earlier run's raw CSV, numbers as numbers (the run's setup flags are
    not in it: its summary's first line says them)."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    text, whole = {"server", "dataset", "loader"}, {"round", "rows", "bytes"}
    return [{k: v if k in text else int(v) if k in whole else float(v) for k, v in r.items()} for r in rows]


def rss_check():
    """Peak RSS of sluice with 8 workers on a ~5 GB input: a plain file (read
    by range) and the same data zstd-compressed (chunks held in memory)."""
    path = DATA / "transactions-5g.tsv"
    if not path.exists():
        sh([str(SLUICE), "gen", "transactions", "--rows", "120M", "-o", str(path)])
    zst = DATA / "transactions-5g.tsv.zst"
    if not zst.exists():
        sh(["zstd", "-q", "-1", "-T2", str(path), "-o", str(zst)])
    server = Server()
    try:
        server.psql(ddl("transactions"))
        # The binary plan keeps an encoded piece per worker besides the chunk.
        for input_path, copy_format in ((path, "auto"), (zst, "auto"), (zst, "binary")):
            server.psql("TRUNCATE transactions; CHECKPOINT")
            cmd = [str(SLUICE), "load", "--restart", str(input_path), "--table", "transactions", "--workers", "8", "--quiet",
                   "--format", "tsv", "--copy-format", copy_format, "--analyze", "no"]
            wall, cpu, rss = run_measured([cmd], server.env)
            count = int(server.psql("SELECT count(*) FROM transactions"))
            assert count == 120_000_000, count
            print(f"peak RSS, 8 workers, {input_path.name} ({input_path.stat().st_size / 1e9:.2f} GB on disk), "
                  f"--copy-format {copy_format}: {rss:.1f} MB; {count} rows in {wall:.1f} s", flush=True)
    finally:
        server.stop()


def rejects_bench(rounds, workers):
    """transactions 10 M with 1 bad record in 10,000 (scattered, seeded)
    against the clean file, same run: throughput ratio of the bad load."""
    import random
    prepare_data(["transactions"], None)
    clean = DATA / "transactions.tsv"
    bad = DATA / "transactions-bad.tsv"
    if not bad.exists():
        rng = random.Random(42)
        with open(clean) as src, open(bad, "w") as dst:
            for line in src:
                dst.write("x" + line if rng.random() < 1e-4 else line)
    expected_bad = sum(1 for line in open(bad) if line.startswith("x"))
    server = Server()
    results = {}
    try:
        server.psql(ddl("transactions"))
        for r in range(rounds):
            for label, path in (("clean", clean), ("1 bad in 10k", bad)):
                server.psql("TRUNCATE transactions; CHECKPOINT")
                time.sleep(0.3)
                rejects = Path(tempfile.mkdtemp()) / "r.jsonl"
                cmd = [str(SLUICE), "load", "--restart", str(path), "--table", "transactions", "--quiet", "--format", "tsv",
                       "--workers", str(workers), "--rejects", str(rejects), "--analyze", "no"]
                start = time.perf_counter()
                code = subprocess.run(cmd, env=server.env).returncode
                wall = time.perf_counter() - start
                loaded = int(server.psql("SELECT count(*) FROM transactions"))
                rejected = sum(1 for _ in open(rejects)) if rejects.exists() else 0
                shutil.rmtree(rejects.parent, ignore_errors=True)
                want_bad = expected_bad if path == bad else 0
                assert (loaded, rejected) == (10_000_000 - want_bad, want_bad), (label, loaded, rejected, code)
                results.setdefault(label, []).append(wall)
                print(f"{label:13} round {r}: {wall:.2f} s, {loaded} loaded, {rejected} rejected", flush=True)
    finally:
        server.stop()
    clean_s, bad_s = statistics.median(results["clean"]), statistics.median(results["1 bad in 10k"])
    print(f"\n| transactions 10 M, {workers} workers | wall s (median of {rounds}) | throughput vs clean |")
    print("|---|---|---|")
    print(f"| clean | {clean_s:.2f} | 100 % |")
    print(f"| 1 bad record in 10,000 ({expected_bad} rejected) | {bad_s:.2f} | {100 * clean_s / bad_s:.0f} % |")


def load_into_empty(server, table, rows, cmds, ready=lambda: None):
    """Empties `table` and checkpoints, calls `ready` (its result comes back
    last), runs `cmds` measured and checks that `rows` rows loaded: wall s,
    client CPU s, server CPU s, what `ready` returned."""
    server.psql(f"TRUNCATE {table}; CHECKPOINT")
    time.sleep(0.3)
    found, before = ready(), server.cpu_seconds()
    wall, cpu, _ = run_measured(cmds, server.env)
    time.sleep(0.5)
    s_cpu = server.cpu_seconds() - before
    assert int(server.psql(f"SELECT count(*) FROM {table}")) == rows
    return wall, cpu, s_cpu, found


def matrix(name, workers, chunks, rounds, extra):
    """sluice alone over workers x chunk sizes, to choose defaults."""
    file, table, rows, _, fmt = DATASETS[name]
    prepare_data([name], None)
    server = Server()
    results = {}
    try:
        server.psql(ddl(name))
        for r in range(rounds):
            for w in workers:
                for c in chunks:
                    cmd = [str(SLUICE), "load", "--restart", str(DATA / file), "--table", table, "--quiet", "--workers", str(w),
                           "--chunk-size", c, *fmt, "--analyze", "no", *extra]
                    wall, cpu, s_cpu, _ = load_into_empty(server, table, rows, [cmd])
                    results.setdefault((w, c), []).append((wall, cpu, s_cpu))
                    print(f"{name} w{w} {c:>6} round {r}: {wall:.2f} s client {cpu:.2f} server {s_cpu:.2f}",
                          flush=True)
    finally:
        server.stop()
    print(f"\n| {name} | workers | chunk | wall s (median) | server CPU s | client CPU s |\n|---|---|---|---|---|---|")
    for (w, c), runs in results.items():
        med = lambda i: statistics.median(x[i] for x in runs)
        print(f"| | {w} | {c} | {med(0):.2f} | {med(2):.1f} | {med(1):.2f} |")


def wal_files_bench(name, rounds):
    """psql \\copy and sluice on one dataset, first with every WAL file
    created during the load (wal_recycle off: what a load meets when it writes
    more than the server kept, min_wal_size by default 80MB), then with old
    ones reused (min_wal_size = 4GB). In that order: files kept for reuse stay
    ahead of the WAL, so a block of new files cannot follow one of reused."""
    prepare_data([name], None)
    server = Server()
    loads = {label: cmds for label, cmds in loaders(name, server, DATA).items() if label in ("psql \\copy", "sluice")}
    table, rows = DATASETS[name][1], DATASETS[name][2]
    wal_dir = server.dir / "data" / "pg_wal"
    wal_files = lambda: sum(1 for f in wal_dir.iterdir() if len(f.name) == 24)
    results = {}
    try:
        server.psql(ddl(name))
        for regime, settings in (("new WAL files", "wal_recycle = off"), ("reused WAL files", "min_wal_size = '4GB'")):
            server.psql("ALTER SYSTEM RESET ALL")
            server.psql(f"ALTER SYSTEM SET {settings}")
            server.psql("SELECT pg_reload_conf()")
            for r in range(rounds):
                for label in rotated(list(loads), r, rounds):
                    wall, _, s_cpu, files = load_into_empty(server, table, rows, loads[label], ready=wal_files)
                    results.setdefault((regime, label), []).append((wall, s_cpu))
                    print(f"{regime:16} {label:11} round {r}: {wall:.2f} s, server CPU {s_cpu:.2f} s, "
                          f"WAL files {files} -> {wal_files()}", flush=True)
    finally:
        server.stop()
    med = lambda key, i: statistics.median(x[i] for x in results[key])
    print(f"\n| {name} | loader | wall s (median of {rounds}) | x psql \\copy | server CPU s |\n|---|---|---|---|---|")
    for regime, label in results:
        ratio = med((regime, "psql \\copy"), 0) / med((regime, label), 0)
        print(f"| {regime} | {label} | {med((regime, label), 0):.2f} | {ratio:.2f}x | {med((regime, label), 1):.1f} |")


# Issue 5's targets for sluice's defaults, x psql \\copy in the same run.
TARGETS = {"transactions": 1.6, "lineitem": 2.4, "cname": 1.9, "transactions-indexed": 2.5}


def history(since):
    """Every saved run's ratios for the targets' datasets, by PostgreSQL major version: one run is a
    poor judge of a target within 10 % of it on a noisy 2-core host, so this says how often it holds."""
    runs = {}
    for path in sorted(RESULTS.glob("summary-*.md")):
        if path.stem.removeprefix("summary-") < since:
            continue
        lines = path.read_text().splitlines()
        first = lines[0] if lines else ""
        version = first.split("PostgreSQL ", 1)[1].split(".", 1)[0] if "PostgreSQL " in first else "not noted"
        ratios = {}
        for line in lines:
            cells = [c.strip() for c in line.split("|")]
            if len(cells) > 6 and cells[1] in TARGETS and cells[6].endswith("x"):
                ratios[(cells[1], cells[2])] = float(cells[6][:-1])
        for name in TARGETS:
            if (name, "sluice") in ratios:
                split = ratios.get((name, "split 2 x psql"))
                runs.setdefault((version, name), []).append((ratios[(name, "sluice")], split))
    out = [f"Runs saved in {RESULTS.name}/ since {since or 'the first'}, sluice's defaults x psql \\copy in the same run:", "",
           "| PostgreSQL | dataset | target | runs | median | target met | lowest - highest | at least the hand split |",
           "|---|---|---|---|---|---|---|---|"]
    for (version, name), found in sorted(runs.items()):
        ratios = [r for r, _ in found]
        beat = sum(1 for r, split in found if split is not None and r >= split)
        split_runs = sum(1 for _, split in found if split is not None)
        out.append(f"| {version} | {name} | {TARGETS[name]}x | {len(ratios)} | {statistics.median(ratios):.2f}x | "
                   f"{sum(r >= TARGETS[name] for r in ratios)} | {min(ratios):.2f}-{max(ratios):.2f}x | "
                   f"{beat} of {split_runs} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", default="transactions,lineitem,cname,transactions-indexed,transactions-1m,lineitem-1m")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rss", action="store_true", help="only the peak-RSS check on a 5 GB input")
    ap.add_argument("--matrix", metavar="DATASET", help="sluice alone over --workers x --chunks")
    ap.add_argument("--workers", default="1,2,3,4")
    ap.add_argument("--chunks", default="4MiB,16MiB,64MiB")
    ap.add_argument("--extra", default="", help="more sluice load arguments, space-separated")
    ap.add_argument("--rejects", action="store_true", help="only the 1-bad-in-10,000 throughput check")
    ap.add_argument("--sync-on", action="store_true", help="server with synchronous_commit = on")
    ap.add_argument("--pg-bindir", help="run this PostgreSQL's initdb/pg_ctl/postgres instead of Debian's")
    ap.add_argument("--wal-level", choices=["minimal", "replica", "logical"], help="the server's wal_level")
    ap.add_argument("--write-mbps", type=float, help="throttle the server's disk writes (an emulated slow disk; root)")
    ap.add_argument("--socket", action="store_true", help="every loader connects over the Unix socket")
    ap.add_argument("--wal-files", metavar="DATASET",
                    help="psql and sluice into new WAL files, then into reused ones (min_wal_size)")
    ap.add_argument("--summarize", metavar="RAW_CSV", help="only print the summary of an earlier run's raw CSV")
    ap.add_argument("--history", metavar="SINCE", nargs="?", const="",
                    help="only how often each of issue 5's targets held in the saved runs (since a stamp: 2026-11-24)")
    args = ap.parse_args()
    if args.history is not None:
        return print(history(args.history))
    if args.summarize:
        return print(summarize(read_raw(args.summarize)))
    global SYNC_ON, PG_BINDIR, WAL_LEVEL, WRITE_MBPS, SOCKET
    SYNC_ON, PG_BINDIR, WAL_LEVEL, WRITE_MBPS = args.sync_on, args.pg_bindir, args.wal_level, args.write_mbps
    SOCKET = args.socket
    sh(["cargo", "build", "--release", "--quiet"], cwd=ROOT)
    if args.rss:
        return rss_check()
    if args.rejects:
        return rejects_bench(args.rounds, 2)
    if args.wal_files:
        return wal_files_bench(args.wal_files, args.rounds)
    if args.matrix:
        return matrix(args.matrix, [int(w) for w in args.workers.split(",")], args.chunks.split(","),
                      args.rounds, args.extra.split())
    names = args.datasets.split(",")
    prepare_data(names, None)
    raw = bench(names, args.rounds)
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y-%m-%d-%H%M")
    with open(RESULTS / f"raw-{stamp}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(raw[0]))
        w.writeheader()
        w.writerows(raw)
    table = summarize(raw, warmed=True)
    (RESULTS / f"summary-{stamp}.md").write_text(table + "\n")
    print(table)


if __name__ == "__main__":
    main()

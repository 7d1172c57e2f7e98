//! `sluice doctor`: what would make a bulk load faster or safer on this
//! server and table, with the measurement behind each piece of advice.
//!
//! Reads only what any user may read (`pg_settings`, the catalogs); what it
//! cannot read it says so instead of guessing. The expected effects quoted
//! come from the field reports in the seeds and from bench/README.md.

use crate::error::Error;
use crate::load::foreign;
use crate::sink::postgres::{PgSession, TableInfo};
use crate::sink::socket::{listening, socket_dir, Listening, USUAL_SOCKET_DIRS};
use crate::sql::quote_literal;

/// One observation and what to do about it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Finding {
    /// What was looked at: a setting name, or `table`.
    pub topic: String,
    /// What was found.
    pub value: String,
    /// `ok`, `advice` or `warning`.
    pub level: &'static str,
    pub advice: String,
}

const SETTINGS: &[&str] = &[
    "shared_buffers",
    "max_wal_size",
    "min_wal_size",
    "wal_recycle",
    "wal_init_zero",
    "wal_buffers",
    "checkpoint_timeout",
    "wal_level",
    "synchronous_commit",
    "fsync",
    "full_page_writes",
    "autovacuum",
    "maintenance_work_mem",
    "max_connections",
];

/// Settings PostgreSQL 12 added: absent on older servers, where they are
/// not reported as unreadable.
const SINCE_12: &[&str] = &["wal_recycle", "wal_init_zero"];

/// Server settings, then (with a table) the table's shape.
pub fn examine(session: &PgSession, table: Option<&TableInfo>, workers: usize) -> Result<Vec<Finding>, Error> {
    let names: Vec<String> = SETTINGS.iter().map(|s| quote_literal(s)).collect();
    let rows = session.query(
        &format!(
            "SELECT name, setting, coalesce(unit, ''), pg_catalog.current_setting(name) FROM pg_catalog.pg_settings \
             WHERE name IN ({})",
            names.join(", ")
        ),
        &[],
    )?;
    let mut findings = Vec::new();
    for name in SETTINGS {
        match rows.iter().find(|r| r[0].as_deref() == Some(name)) {
            Some(r) => findings.push(setting_advice(name, &setting_bytes(r), r[3].as_deref().unwrap_or(""), workers)),
            None if SINCE_12.contains(name) && session.server_version() < 120_000 => {}
            None => findings.push(Finding {
                topic: name.to_string(),
                value: "could not be read".into(),
                level: "advice",
                advice: "this user may not read it; ask the administrator".into(),
            }),
        }
    }
    // SQL does not tell the server's CPU count; a server on this machine
    // has this machine's.
    let cpus = match session.server_is_local()? {
        true => std::thread::available_parallelism()
            .map_or("unknown".into(), |n| format!("{n} (the server runs on this machine)")),
        false => "not visible (the server runs on another machine)".into(),
    };
    findings.push(Finding {
        topic: "server CPUs".into(),
        value: cpus,
        level: "ok",
        advice: "sluice's default, --workers auto, starts with 2 connections and adds one while throughput \
                 rises (no more than this machine's CPUs when the server runs here); the field reports found the \
                 best between 2 and the server's core count, and 12 on 8 cores slower; sluice bench measures it"
            .into(),
    });
    findings.push(version_advice(session.server_version()));
    findings.push(connection_advice(session)?);
    findings.extend(search_path_advice(session)?);
    if let Some(table) = table {
        findings.extend(table_findings(session, table)?);
    }
    Ok(findings)
}

/// What the extension lock cost on this project's benchmark (bench/README.md),
/// quoted by the doctor's advice and the load report's hint.
pub const EXTENSION_LOCK_MEASURED: &str =
    "on this project's 2-core benchmark, 10 M rows loaded by 2 sessions ran 1.5-1.6x psql \\copy on 15 \
     (from run to run), 1.8-1.9x on 18";

/// What creating WAL files during a load cost on this project's benchmark
/// (bench/README.md), against reusing old ones.
const WAL_FILES_MEASURED: &str = "on this project's 2-core benchmark, lineitem loaded in 4.75-4.85 s into \
     reused WAL files against 5.08-5.23 s into new ones, psql \\copy in 10.66-10.84 against 11.34-12.08 s";

/// PostgreSQL 16 changed how a table grows, which decides how well parallel
/// sessions scale (measured: bench/README.md).
fn version_advice(server_version_num: i32) -> Finding {
    let (major, minor) = (server_version_num / 10_000, server_version_num % 10_000);
    let old = server_version_num < 160_000;
    Finding {
        topic: "server version".into(),
        value: format!("{major}.{minor}"),
        level: if old { "advice" } else { "ok" },
        advice: match old {
            true => format!(
                "parallel sessions loading one table queue on its extension lock: PostgreSQL 15 and older grow a \
                 table one page at a time under that lock (sluice's report shows it as Lock:extend); 16 and later \
                 grow it many pages at a time ({EXTENSION_LOCK_MEASURED})"
            ),
            false => String::new(),
        },
    }
}

/// A role named like the ledger's schema finds that schema first through
/// `"$user"` on its search path, so once a load created it, the role's
/// unqualified `CREATE TABLE` puts tables there (where other roles do not
/// look). Said only when it applies.
fn search_path_advice(session: &PgSession) -> Result<Option<Finding>, Error> {
    let rows = session.query("SELECT current_user::text, current_setting('search_path')", &[])?;
    let row = rows.first().cloned().unwrap_or_default();
    let [role, path] = [0, 1].map(|i| row.get(i).cloned().flatten().unwrap_or_default());
    Ok((role == crate::ledger::SCHEMA && path.contains("\"$user\"")).then(|| Finding {
        topic: "search_path".into(),
        value: path,
        level: "advice",
        advice: format!(
            "this role is named {role}, as sluice's ledger schema is: once a load has created that schema, \
             \"$user\" names it, and an unqualified CREATE TABLE puts tables there, where other roles do not \
             look; create tables as public.NAME, or leave \"$user\" out: ALTER ROLE {} SET search_path = public",
            crate::sql::quote_ident(&role)
        ),
    }))
}

/// Over TCP to a server on this machine, the kernel's TCP work takes CPU
/// from the server on the same cores; a Unix socket costs less (measured:
/// bench/README.md). The socket file is looked for on this machine, which
/// is the server's ([`PgSession::server_is_local`]).
fn connection_advice(session: &PgSession) -> Result<Finding, Error> {
    let Listening { address, port, socket_dirs: dirs } = listening(session)?;
    let finding = |value: String, level, advice: String| Finding { topic: "connection".into(), value, level, advice };
    let Some(address) = address else { return Ok(finding("Unix socket".into(), "ok", String::new())) };
    let value = format!("TCP to {address}");
    if !session.server_is_local()? {
        return Ok(finding(value, "ok", String::new()));
    }
    Ok(match socket_dir(dirs.as_deref(), &port) {
        Some(dir) => finding(
            value,
            "ok",
            format!(
                "the server also listens on a Unix socket in {dir}: sluice load goes through it by itself when it \
                 leads to the same server as the same role (--keep-tcp to stay on TCP), which skips the kernel's \
                 TCP work competing with the server for the same cores (lineitem loaded 5-9 % faster); for other \
                 clients: host={dir} port={port}"
            ),
        ),
        None => finding(
            value,
            "ok",
            match dirs {
                Some(_) => "the server has no Unix socket on this machine".into(),
                None => format!(
                    "no Unix socket for port {port} in {} (only superusers and pg_read_all_settings may read \
                     unix_socket_directories)",
                    USUAL_SOCKET_DIRS.join(" or ")
                ),
            },
        ),
    })
}

/// A setting in bytes or seconds when it has such a unit, else its text.
fn setting_bytes(row: &[Option<String>]) -> Option<u64> {
    let value: u64 = row[1].as_deref()?.parse().ok()?;
    let unit = row[2].as_deref().unwrap_or("");
    let scale = match unit {
        "8kB" => 8 << 10,
        "kB" => 1 << 10,
        "MB" => 1 << 20,
        "s" | "" => 1,
        "ms" => return Some(value / 1000),
        "min" => 60,
        _ => return None,
    };
    Some(value * scale)
}

fn setting_advice(name: &str, number: &Option<u64>, shown: &str, workers: usize) -> Finding {
    let (level, advice): (&'static str, String) = match (name, number, shown) {
        ("max_wal_size", Some(b), _) if *b < 4 << 30 => (
            "advice",
            "raise to 16GB or more for bulk loads: \
            fewer checkpoints during the load, each of which writes every dirty page and brings back \
            full-page images in the WAL"
                .into(),
        ),
        ("min_wal_size", Some(b), _) if *b < 1 << 30 => (
            "advice",
            format!(
                "raise it to about the WAL one load writes (about the data's size for a table without \
                 indexes: lineitem's 754 MB wrote 855 MB), e.g. 4GB, a reload, no restart: after a checkpoint \
                 the server keeps that much of the old WAL files for reuse (more only while recent checkpoints \
                 were further apart), and a load that writes more creates and zero-fills new ones \
                 ({WAL_FILES_MEASURED}); pg_wal keeps that much disk"
            ),
        ),
        ("wal_recycle", _, "off") => (
            "advice",
            format!(
                "turn it on unless the file system is copy-on-write (ZFS, btrfs): off, every WAL file a load \
                 writes is created and zero-filled anew ({WAL_FILES_MEASURED})"
            ),
        ),
        ("wal_init_zero", _, "off") => (
            "advice",
            "turn it on unless the file system is copy-on-write (ZFS, btrfs): here (ext4) new WAL files not \
             zero-filled were slower still to write: lineitem loaded in 5.40-5.79 s against 4.91-5.25 s"
                .into(),
        ),
        ("wal_buffers", Some(b), _) if *b < 16 << 20 => (
            "advice",
            "raise to 16MB or more (a restart; by default it is a 32nd of shared_buffers, so \
            shared_buffers of 512MB or more raises it too): a load can write more WAL than that between \
            the WAL writer's wake-ups, 50 ms apart (about 8 MB at 170 MB/s here), and the loading \
            sessions then write it themselves, \
            queued on its lock; here lineitem took a median 6.06 s with 4MB (3-7 % of the samples on \
            WAL locks) against 5.41 s with 16MB"
                .into(),
        ),
        ("checkpoint_timeout", Some(s), _) if *s < 15 * 60 => (
            "advice",
            "raise to 30min for bulk loads, for the \
            same reason as max_wal_size"
                .into(),
        ),
        ("shared_buffers", Some(b), _) if *b < 1 << 30 => (
            "advice",
            "raise to about a quarter of the server's \
            memory: in the field report on 8.7 M rows, 128MB to 4GB took the load from 87k to 164k rows/s"
                .into(),
        ),
        ("synchronous_commit", _, "on") => (
            "ok",
            "sluice turns it off for its own sessions, which its ledger makes \
            safe (5-6 % faster here); nothing to change"
                .into(),
        ),
        ("fsync", _, "off") => (
            "warning",
            "a crash can corrupt the whole cluster, not just lose the load; sluice \
            does not need it off (no gain measured)"
                .into(),
        ),
        ("full_page_writes", _, "off") => {
            ("warning", "torn pages after a crash are not repairable; leave it on".into())
        }
        ("autovacuum", _, "on") => (
            "ok",
            "turning it off gave no measurable gain in the field reports; leave it on: it \
            analyzes a table within a minute or so of a load that added a tenth of its rows \
            (sluice load --analyze does it at once)"
                .into(),
        ),
        ("autovacuum", _, "off") => (
            "advice",
            "sluice analyzes the tables it loads (--analyze auto), but no other table is analyzed \
            or vacuumed while it is off (anti-wraparound vacuums aside; a field report found its DELETEs \
            10 times slower after loading with it off): turn it back on after the loads, where it gave no \
            measurable gain"
                .into(),
        ),
        ("maintenance_work_mem", Some(b), _) if *b < 1 << 30 => (
            "advice",
            "raise to 1GB for the sessions that \
            build indexes after a load: index builds sort in memory"
                .into(),
        ),
        ("wal_level", _, level) if level != "minimal" => (
            "ok",
            "with wal_level = minimal (a restart, and no \
            replicas or WAL archiving) a load into a table created or truncated in the same transaction skips \
            the WAL: 1-6 % faster here, and no checkpoint debt afterwards, but one session only, and on a disk \
            writing 100 MB/s it took twice as long to commit (the table is synced at commit); sluice's chunked \
            sessions write WAL either way"
                .into(),
        ),
        ("max_connections", Some(n), _) if (*n as usize) < workers + 5 => (
            "warning",
            format!(
                "{workers} workers \
            need {workers} connections; raise it or use fewer --workers"
            ),
        ),
        _ => ("ok", String::new()),
    };
    Finding { topic: name.to_string(), value: shown.to_string(), level, advice }
}

/// What `auto` does with GIN indexes before PostgreSQL 18 (see
/// `load::defer`): keeps them, since one process would build them.
fn gin_kept(indexes: &[Vec<Option<String>>], server_version: i32) -> String {
    let gin: Vec<&str> =
        indexes.iter().filter(|r| r[2].as_deref() == Some("t")).filter_map(|r| r[0].as_deref()).collect();
    if gin.is_empty() || server_version >= crate::load::PARALLEL_GIN_BUILDS {
        return String::new();
    }
    format!(
        ". GIN ({}) stays in place with auto before PostgreSQL 18, which builds it with one process while the \
         loading sessions each keep it up to date (5 M JSON documents: 74 s in place, 125 s deferred)",
        gin.join(", ")
    )
}

/// Indexes, constraints, foreign keys, triggers, persistence and size; for
/// a foreign table, which server stores it (its indexes and size are there).
fn table_findings(session: &PgSession, table: &TableInfo) -> Result<Vec<Finding>, Error> {
    let foreign = foreign_finding(table, session.server_version());
    if table.is_foreign() {
        return Ok(foreign.into_iter().collect());
    }
    let oid = format!("{}::regclass", quote_literal(&table.quoted()));
    let q = |sql: &str| -> Result<Vec<Vec<Option<String>>>, Error> { session.query(&sql.replace("$T", &oid), &[]) };
    let indexes = q("SELECT i.indexrelid::regclass::text, i.indisprimary OR i.indisunique, a.amname = 'gin' \
                     FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid \
                     JOIN pg_catalog.pg_am a ON a.oid = c.relam WHERE i.indrelid = $T ORDER BY 1")?;
    let constraints = |contype: &str| {
        q(&format!(
            "SELECT count(*) FROM pg_catalog.pg_constraint con WHERE conrelid = $T AND contype = '{contype}' AND {}",
            crate::sink::postgres::ENFORCED
        ))
    };
    let (fks, checks) = (constraints("f")?, constraints("c")?);
    let triggers = q("SELECT count(*) FROM pg_catalog.pg_trigger WHERE tgrelid = $T AND NOT tgisinternal")?;
    let shape = q("SELECT relpersistence, pg_catalog.pg_size_pretty(pg_catalog.pg_total_relation_size($T)), \
                   reltuples::bigint FROM pg_catalog.pg_class WHERE oid = $T")?;
    let count = |rows: &Vec<Vec<Option<String>>>| rows.first().and_then(|r| r[0].clone()).unwrap_or_default();
    let name = table.display();
    let mut out = Vec::new();
    let unique = indexes.iter().filter(|r| r[1].as_deref() == Some("t")).count();
    let index_names: Vec<String> = indexes.iter().filter_map(|r| r[0].clone()).collect();
    out.push(Finding {
        topic: format!("{name} indexes"),
        value: if index_names.is_empty() { "none".into() } else { index_names.join(", ") },
        level: if indexes.is_empty() { "ok" } else { "advice" },
        advice: if indexes.is_empty() {
            String::new()
        } else {
            format!(
                "every index is updated row by row during the load: with a primary key, 10 M rows took 14.1 s \
                 instead of 5.1 s plus 3.6 s to add the key afterwards; sluice drops and rebuilds them itself \
                 when the table is empty (--defer-indexes auto); for a big load into a large share of a full \
                 table, --defer-indexes yes drops {} there too{}",
                match indexes.len() {
                    1 => "it".to_string(),
                    n => format!("all {n}"),
                },
                if unique > 0 { " (unique ones too: duplicates still end up as rejects)" } else { "" }
            ) + &gin_kept(&indexes, session.server_version())
        },
    });
    for (what, rows, advice) in [
        (
            "foreign keys",
            &fks,
            "checked per row at the end of each chunk's COPY; --defer-indexes adds them after the load (violating \
             rows still end up as rejects)",
        ),
        ("CHECK constraints", &checks, "cheap, checked per row; violations become rejects"),
        (
            "triggers",
            &triggers,
            "run per row and can dominate a load; disable them only if you know what they do. An INSERT trigger \
             also keeps sluice from deferring keys and constraints (a chunk loaded again would run it twice)",
        ),
    ] {
        let n = count(rows);
        out.push(Finding {
            topic: format!("{name} {what}"),
            value: n.clone(),
            level: if n == "0" { "ok" } else { "advice" },
            advice: if n == "0" { String::new() } else { advice.to_string() },
        });
    }
    if let Some(row) = shape.first() {
        let unlogged = row[0].as_deref() == Some("u");
        out.push(Finding {
            topic: format!("{name} size"),
            value: format!("{} on disk, {}", row[1].clone().unwrap_or_default(), rows_estimate(row[2].as_deref())),
            level: if unlogged { "warning" } else { "ok" },
            advice: if unlogged {
                "the table is UNLOGGED: a crash or unclean shutdown empties it; set it LOGGED when the load is done"
                    .into()
            } else {
                String::new()
            },
        });
    }
    out.extend(foreign);
    Ok(out)
}

/// The foreign tables a load into `table` writes to: what loading them
/// risks, and whether their rows go one at a time (see [`crate::load::foreign`]).
fn foreign_finding(table: &TableInfo, server_version_num: i32) -> Option<Finding> {
    table.foreign.first()?;
    let listed: Vec<String> =
        table.foreign.iter().map(|f| format!("{} (server {}, {})", f.display, f.server, f.wrapper)).collect();
    let mut advice = format!(
        "{}; sluice loads them only with --at-least-once, and loading each table on its own server keeps every \
         chunk exactly once",
        foreign::RISK
    );
    if let Some(batch) = foreign::batch_advice(table, server_version_num) {
        advice = format!("{advice}; {batch}");
    }
    Some(Finding {
        topic: format!("{} foreign tables", table.display()),
        value: listed.join(", "),
        level: "warning",
        advice,
    })
}

/// `reltuples` is -1 until the table is first vacuumed or analyzed.
fn rows_estimate(reltuples: Option<&str>) -> String {
    match reltuples.and_then(|v| v.parse::<i64>().ok()) {
        Some(n) if n >= 0 => format!("about {} rows", crate::report::thousands(n as u64)),
        _ => "rows unknown (never analyzed)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_before_16_get_the_extension_lock_advice() {
        let old = version_advice(150_018);
        assert_eq!((old.value.as_str(), old.level), ("15.18", "advice"));
        assert!(old.advice.contains("Lock:extend"));
        let new = version_advice(180_006);
        assert_eq!((new.value.as_str(), new.level), ("18.6", "ok"));
    }

    #[test]
    fn advice_follows_the_settings() {
        let low = setting_advice("max_wal_size", &Some(1 << 30), "1GB", 2);
        assert_eq!(low.level, "advice");
        assert!(low.advice.contains("16GB"));
        assert_eq!(setting_advice("max_wal_size", &Some(16 << 30), "16GB", 2).level, "ok");
        let small =
            setting_advice("wal_buffers", &setting_bytes(&[None, Some("512".into()), Some("8kB".into())]), "4MB", 2);
        assert_eq!(small.level, "advice");
        assert!(small.advice.contains("16MB"), "{}", small.advice);
        assert_eq!(setting_advice("wal_buffers", &Some(16 << 20), "16MB", 2).level, "ok");
        let few_wal_files = setting_advice("min_wal_size", &Some(80 << 20), "80MB", 2);
        assert_eq!(few_wal_files.level, "advice");
        assert!(few_wal_files.advice.contains("4GB") && few_wal_files.advice.contains("zero-fills"));
        assert_eq!(setting_advice("min_wal_size", &Some(4 << 30), "4GB", 2).level, "ok");
        assert_eq!(setting_advice("wal_recycle", &None, "off", 2).level, "advice");
        assert_eq!(setting_advice("wal_recycle", &None, "on", 2).level, "ok");
        assert_eq!(setting_advice("wal_init_zero", &None, "off", 2).level, "advice");
        assert_eq!(setting_advice("fsync", &None, "off", 2).level, "warning");
        assert_eq!(setting_advice("max_connections", &Some(5), "5", 8).level, "warning");
        assert_eq!(setting_bytes(&[None, Some("16384".into()), Some("8kB".into())]), Some(128 << 20));
        assert_eq!(rows_estimate(Some("-1")), "rows unknown (never analyzed)");
        assert_eq!(rows_estimate(Some("42")), "about 42 rows");
        assert_eq!(rows_estimate(Some("9998988")), "about 9,998,988 rows");
    }
}

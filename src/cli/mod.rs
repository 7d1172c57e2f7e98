//! Subcommands: each file holds one command's flags, help text and `run`.

mod bench;
mod demo;
mod doctor;
mod forget;
mod gen;
mod load;
mod progress_view;
mod rejects;
mod status;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use clap::{Parser, Subcommand};
use sluice::redact::Redactor;
use sluice::sink::postgres::PgTarget;
use sluice::Error;

#[derive(Parser, Debug)]
#[command(
    name = "sluice",
    version,
    about = "The fastest safe way to move a big file into a database.",
    long_about = "sluice loads big CSV, TSV and JSON-lines files (one file, many, a glob, stdin; \
                  gzip, zstd, bzip2, xz or lz4) into PostgreSQL over several connections at once, cutting the input \
                  at record boundaries and copying each chunk in its own transaction."
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per process: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
enum Command {
    Load(load::LoadArgs),
    Gen(gen::GenArgs),
    Demo(demo::DemoArgs),
    Status(status::StatusArgs),
    Forget(forget::ForgetArgs),
    Rejects(rejects::RejectsArgs),
    Doctor(doctor::DoctorArgs),
    Bench(bench::BenchArgs),
}

impl Cli {
    /// Whether the command's output is what the user came for, often piped
    /// on (`sluice rejects f | head`, `sluice status | grep`): status,
    /// rejects and doctor. They only read, so a reader that stops early
    /// may end them at once. `gen` handles its closed output itself; load,
    /// bench and demo have loads or a server to finish first.
    pub fn prints_for_a_reader(&self) -> bool {
        matches!(self.command, Command::Status(_) | Command::Rejects(_) | Command::Doctor(_))
    }
}

/// A reader that stops early (`| head`) ends the command the way it ends
/// `cat`: quietly, by SIGPIPE. Rust ignores SIGPIPE, so every print after
/// the reader left failed, and `println!` panicked with a backtrace.
/// libpq does not rely on it being ignored: it sends with MSG_NOSIGNAL.
pub fn end_quietly_when_the_reader_stops() {
    // SAFETY: sets a signal's disposition to the default before any thread starts.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

/// A line of the final output of a command that loads (`load`, `bench`):
/// printed if standard output still takes it. By then the load has
/// committed and recorded everything, so a reader that left early must not
/// turn its exit code into a panic's.
pub fn print_out(line: impl std::fmt::Display) {
    use std::io::Write;
    let _ = writeln!(std::io::stdout(), "{line}");
}

/// Runs the chosen command; returns the exit code on success.
pub fn run(cli: Cli, redactor: &mut Redactor) -> Result<i32, Error> {
    match cli.command {
        Command::Load(args) => load::run(args, redactor),
        Command::Gen(args) => gen::run(args),
        Command::Demo(args) => demo::run(args, redactor),
        Command::Status(args) => status::run(args, redactor),
        Command::Forget(args) => forget::run(args, redactor),
        Command::Rejects(args) => rejects::run(args),
        Command::Doctor(args) => doctor::run(args, redactor),
        Command::Bench(args) => bench::run(args, redactor),
    }
}

/// The target `--db` names, with every password it may use registered for
/// masking before anything is printed.
pub fn guarded_target(db: Option<&str>, redactor: &mut Redactor) -> PgTarget {
    let target = PgTarget::new(db);
    for secret in target.secrets() {
        redactor.add(&secret);
    }
    target
}

/// A session on `--db` for a command that reads or changes the ledger
/// (`usage`), or `None` when the database holds none.
pub fn ledger_session(
    db: Option<&str>,
    redactor: &mut Redactor,
    usage: sluice::ledger::LedgerUse,
) -> Result<Option<sluice::sink::postgres::PgSession>, Error> {
    let session = guarded_target(db, redactor).connect()?;
    sluice::ledger::refuse_out_of_reach(&session, usage)?;
    Ok(sluice::ledger::is_there(&session)?.then_some(session))
}

/// A flag set by the first Ctrl-C, TERM or HUP (the load stops handing out
/// chunks and lets in-flight ones commit; lock waits and index builds are
/// cancelled, see `load::blockers`); a second one exits at once, and
/// the server rolls back whatever was in flight. TERM counts because it is
/// how `kill`, systemd and container runtimes ask a program to stop.
pub fn interrupt_flag() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let seen = flag.clone();
    let installed = ctrlc::set_handler(move || {
        if seen.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
        eprintln!(
            "sluice: stopping after the chunks in flight (index builds and lock waits are cancelled); Ctrl-C (or \
             TERM) again to quit at once"
        );
    });
    if let Err(e) = installed {
        eprintln!("sluice: warning: Ctrl-C and TERM will not stop the load cleanly: {e}");
    }
    flag
}

/// Parses human sizes: `1KiB`, `64MiB`, `1G`, `512k`, `4096`.
pub fn parse_byte_size(text: &str) -> Result<u64, String> {
    let size = parse_size::Config::new()
        .with_binary()
        .parse_size(text)
        .map_err(|_| format!("invalid size '{text}', which should be digits with an optional unit: 1KiB, 64MiB, 1G"))?;
    if size == 0 {
        return Err("the size must be more than 0 bytes".into());
    }
    Ok(size)
}

/// Parses counts with decimal suffixes: `5M`, `10k`, `1_000_000`.
pub fn parse_count(text: &str) -> Result<u64, String> {
    let cleaned = text.replace('_', "");
    let (digits, factor) = match cleaned.chars().last() {
        Some('k' | 'K') => (&cleaned[..cleaned.len() - 1], 1_000),
        Some('m' | 'M') => (&cleaned[..cleaned.len() - 1], 1_000_000),
        Some('g' | 'G' | 'b' | 'B') => (&cleaned[..cleaned.len() - 1], 1_000_000_000),
        _ => (cleaned.as_str(), 1),
    };
    digits
        .parse::<u64>()
        .map(|n| n * factor)
        .map_err(|_| format!("invalid count '{text}': use digits with an optional k, M or G"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_human_sizes() {
        assert_eq!(parse_byte_size("1KiB"), Ok(1024));
        assert_eq!(parse_byte_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_byte_size("1G"), Ok(1 << 30));
        assert_eq!(parse_byte_size("4096"), Ok(4096));
        assert!(parse_byte_size("64MB/s").is_err());
        assert!(parse_byte_size("0").is_err());
    }

    #[test]
    fn parses_counts() {
        assert_eq!(parse_count("5M"), Ok(5_000_000));
        assert_eq!(parse_count("10k"), Ok(10_000));
        assert_eq!(parse_count("1_000"), Ok(1000));
        assert!(parse_count("x").is_err());
    }

    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}

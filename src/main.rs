//! The `sluice` command: parse arguments, call the library, print errors as
//! `sluice: <what failed>: <why>` and exit with a documented code.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    if args.prints_for_a_reader() {
        cli::end_quietly_when_the_reader_stops();
    }
    let mut redactor = sluice::redact::Redactor::default();
    let outcome = cli::run(args, &mut redactor);
    match outcome {
        Ok(code) => ExitCode::from(code as u8),
        Err(err) => {
            eprintln!("sluice: {}", redactor.apply(&err.to_string()));
            ExitCode::from(err.exit_code() as u8)
        }
    }
}

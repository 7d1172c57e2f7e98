//! Integration tests: the `sluice` binary against a real PostgreSQL server
//! that the harness starts (see `util`).

mod util;

// Every format loads exactly what `psql \copy` loads from the same file.
mod formats;
// Many files, globs, headers, stdin, gzip, zstd, workers and chunk sizes.
mod inputs;
// Connection conventions, credentials and the errors a user can meet.
mod connection;
// Binary COPY loads what text COPY loads.
mod binary;
// Bad records cost only themselves: isolation, rejects file, accounting.
mod rejects;
// Indexes and constraints dropped for the load and built again after it.
mod defer;
// Exactly once across kills, interrupts, changed inputs and processes.
mod resume;
// Progress, reports, gen and demo.
mod commands;
// Random files and options: what psql loads from the good records, and
// exactly the bad ones rejected.
mod random_loads;
// Random JSON lines: every document byte for byte, exactly the bad lines
// rejected.
mod random_json_lines;

//! Which job a load belongs to, and whether its input is still the same.
//!
//! The default job name is derived from everything that decides the chunks
//! and where they go (table, inputs, format options, chunk size), so running
//! the same command again resumes the same job. The fingerprint (sizes and
//! modification times) tells whether the input changed since the job began.

use super::LoadRequest;
use crate::format::FormatOptions;
use crate::ledger::stable_hash;
use crate::sink::postgres::TableInfo;
use crate::source::Source;

/// `--job NAME`, or `<table>-<hash of the command's meaning>`.
pub fn name(req: &LoadRequest, table: &TableInfo, format: &FormatOptions, sources: &[Source]) -> String {
    if let Some(job) = &req.job {
        return job.clone();
    }
    let mut parts = vec![
        table.display(),
        format!("{:?}", req.columns),
        format.kind.name().to_string(),
        format!("{:?}{:?}{:?}{:?}{}", format.delimiter, format.quote, format.escape, format.null, format.header),
        format!("{:?}", req.options.encoding),
        req.chunk_size.to_string(),
        req.max_record_size.to_string(),
    ];
    for source in sources {
        let path = source.path.as_ref().and_then(|p| std::fs::canonicalize(p).ok());
        parts.push(path.map_or_else(|| source.name.to_string(), |p| p.display().to_string()));
    }
    let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
    format!("{}-{}", table.name, &stable_hash(&refs)[..12])
}

/// Sizes and modification times of the inputs (stdin cannot be checked).
pub fn fingerprint(sources: &[Source]) -> String {
    let parts: Vec<String> = sources
        .iter()
        .map(|s| {
            let meta = s.path.as_ref().and_then(|p| std::fs::metadata(p).ok());
            let mtime = meta
                .as_ref()
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            format!("{}:{}:{mtime}", s.name, meta.map_or(0, |m| m.len()))
        })
        .collect();
    let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
    stable_hash(&refs)
}

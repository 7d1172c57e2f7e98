//! Backslashes that PostgreSQL's text format silently drops.
//!
//! In the text format (`--format tsv`) a backslash escapes the byte after
//! it. The escapes PostgreSQL writes are `\\`, `\N`, `\b \f \n \r \t \v`,
//! octal digits, `\x` with a hex digit, and a backslash before the
//! delimiter or a line end; before any other byte the server drops the
//! backslash and keeps the byte: `C:\data\x.tsv` loads as `C:datax.tsv`,
//! with no error. A TSV written by another tool (a spreadsheet, pandas, a
//! shell script) holds such backslashes as data, and the load mangles them
//! quietly: the mistake behind the seeds' 20 GB JSON load. Finding one is
//! cheap and certain (no writer of the text format produces it), so the
//! load says so before it starts and names the option that keeps them.

/// Backslashes before a byte the text format does not escape, in a sample.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OddEscapes {
    /// How many the sample holds.
    pub count: u64,
    /// The 1-based line of the first, counting from the sample's start.
    pub first_line: u64,
    /// The first one's backslash and the byte after it.
    pub first: [u8; 2],
}

/// Whether PostgreSQL's text format reads `\` + `byte` as an escape (`next`:
/// the byte after it, for `\x`, which escapes only before a hex digit).
fn is_escape(byte: u8, next: Option<u8>, delimiter: u8) -> bool {
    match byte {
        b'\\' | b'N' | b'b' | b'f' | b'n' | b'r' | b't' | b'v' | b'.' | b'\n' | b'\r' | b'0'..=b'7' => true,
        b'x' => next.is_some_and(|n| n.is_ascii_hexdigit()),
        _ => byte == delimiter,
    }
}

/// The backslashes of `sample` (text-format records, from the start of a
/// line) that escape nothing; `None` when there are none. `skip_lines`
/// lines (a header, which COPY does not read) are not looked at.
pub fn odd_escapes(sample: &[u8], delimiter: u8, skip_lines: u64) -> Option<OddEscapes> {
    let mut found: Option<OddEscapes> = None;
    let (mut line, mut at) = (1, 0);
    while let Some(i) = memchr::memchr2(b'\\', b'\n', &sample[at..]) {
        let pos = at + i;
        at = pos + 1;
        if sample[pos] == b'\n' {
            line += 1;
            continue;
        }
        // The escaped byte (the sample may end before it: then nothing).
        let Some(&byte) = sample.get(pos + 1) else { break };
        at = pos + 2;
        if byte == b'\n' {
            line += 1;
        }
        if line <= skip_lines || is_escape(byte, sample.get(pos + 2).copied(), delimiter) {
            continue;
        }
        match &mut found {
            Some(odd) => odd.count += 1,
            None => found = Some(OddEscapes { count: 1, first_line: line, first: [b'\\', byte] }),
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_postgresql_writes_is_not_odd() {
        let written = b"a\\\\b\t\\N\t\\t\\n\\r\\b\\f\\v\t\\101\\x41\ta\\\tb\tc\\\nd\n\\.\n";
        assert_eq!(odd_escapes(written, b'\t', 0), None);
        assert_eq!(odd_escapes(b"a\\|b|c\n", b'|', 0), None, "the delimiter escaped");
    }

    #[test]
    fn a_backslash_before_another_byte_is_counted_with_its_first_line() {
        let sample = b"id\tpath\n1\tok\n2\tC:\\data\\file.tsv\n3\t\\x\n4\t\\d+\n";
        let odd = odd_escapes(sample, b'\t', 0).unwrap();
        // `\d`, `\x` before a newline, `\d`; `\f` is a form feed.
        assert_eq!(odd, OddEscapes { count: 3, first_line: 3, first: *b"\\d" });
        // `\x` escapes only before a hex digit; the header is not read.
        assert_eq!(
            odd_escapes(b"h\\q\n\\xg\n", b'\t', 1),
            Some(OddEscapes { count: 1, first_line: 2, first: *b"\\x" })
        );
        assert_eq!(odd_escapes(b"h\\q\n", b'\t', 1), None);
        // An escaped newline is data: the lines after it count on.
        assert_eq!(odd_escapes(b"a\\\nb\n\\z\n", b'\t', 0).map(|o| o.first_line), Some(3));
        // A sample cut after a backslash holds nothing more.
        assert_eq!(odd_escapes(b"a\\", b'\t', 0), None);
    }
}

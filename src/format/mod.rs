//! Input formats: which bytes end a record, and which COPY options make the
//! server parse the records exactly as the client cut them.
//!
//! The format has to know where records end (see [`scan`]) and how to
//! describe the format to COPY. Fields are parsed on the client only to
//! encode them for binary COPY (see [`binary`]), which the server reads with
//! less work than text.

pub mod binary;
pub mod convert;
pub mod currency;
pub mod documents;
pub mod escapes;
pub mod json_values;
pub mod pick;
pub mod scan;

use std::path::Path;

pub use scan::{Dialect, RecordScanner, Step};

/// The formats `sluice load` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FormatKind {
    /// PostgreSQL's CSV rules.
    Csv,
    /// PostgreSQL's text COPY format (tab-separated, backslash escapes, `\N`).
    Tsv,
    /// One JSON document per line, into one json/jsonb column, or its keys'
    /// values into the columns of the same names.
    Jsonl,
}

/// `name` without the extension of a compressed format it ends with
/// (`.gz`, `.zst`, `.bz2`, `.xz`, `.lz4`, ...).
pub fn without_compressed_extension(name: &str) -> &str {
    ["gz", "gzip", "zst", "zstd", "bz2", "xz", "lz4"]
        .iter()
        .find_map(|ext| name.strip_suffix(ext)?.strip_suffix('.'))
        .unwrap_or(name)
}

impl FormatKind {
    /// Guesses the format from a file name, looking through the compressed
    /// formats' extensions (see [`without_compressed_extension`]).
    pub fn guess(path: &Path) -> Option<FormatKind> {
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        let ext = without_compressed_extension(&name).rsplit_once('.')?.1;
        match ext {
            "csv" => Some(FormatKind::Csv),
            "tsv" | "tab" | "txt" => Some(FormatKind::Tsv),
            "jsonl" | "ndjson" | "json" => Some(FormatKind::Jsonl),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            FormatKind::Csv => "csv",
            FormatKind::Tsv => "tsv",
            FormatKind::Jsonl => "jsonl",
        }
    }
}

/// The delimiters files are most often written with, in the order sluice
/// tries them when the load's own splits records into the wrong count (see
/// [`FormatOptions::at_delimiter`]).
pub const COMMON_DELIMITERS: [u8; 4] = [b',', b';', b'\t', b'|'];

/// A record without its line end (LF or CRLF).
pub fn without_line_end(record: &[u8]) -> &[u8] {
    let line = record.strip_suffix(b"\n").unwrap_or(record);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// The records `head` (an input's first bytes) holds whole, line ends
/// included, after its header with `--header`: for the checks made before
/// a load from its first records.
pub fn head_records<'h>(head: &'h [u8], format: &FormatOptions) -> Vec<&'h [u8]> {
    let mut scanner = RecordScanner::new(format.dialect(), scan::LineEnd::Lf);
    let (mut records, mut pos) = (Vec::new(), 0);
    while pos < head.len() {
        let step = scanner.scan(&head[pos..], true);
        if step.records == 0 {
            break;
        }
        records.push(&head[pos..pos + step.consumed]);
        pos += step.consumed;
    }
    if format.header && !records.is_empty() {
        records.remove(0);
    }
    records
}

/// A delimiter as `--delimiter` (and `sed`) take it: a tab as `\t`.
pub fn delimiter_text(delimiter: u8) -> String {
    match delimiter {
        b'\t' => "\\t".into(),
        other => (other as char).to_string(),
    }
}

/// A format and its options, as the user gave them.
#[derive(Clone, Debug)]
pub struct FormatOptions {
    pub kind: FormatKind,
    pub delimiter: Option<u8>,
    pub quote: Option<u8>,
    pub escape: Option<u8>,
    pub null: Option<String>,
    /// `--skip-lines N`: lines before each file's header or first record
    /// (an export's title, notes, Excel's `sep=` line), skipped as lines:
    /// a quote in them opens nothing.
    pub skip_lines: u64,
    /// Skip the first record of each file.
    pub header: bool,
    /// `--header=first-file`: with `header`, only the first input surely
    /// begins with the header (the parts `split -l` cuts a file into): a
    /// later input whose first record is not that header has none (see
    /// [`crate::source::Source::no_header`]).
    pub header_in_first_file_only: bool,
    /// `--encoding`: inputs in another encoding are transcoded to UTF-8 on
    /// the client (see [`crate::encoding`]); COPY always receives UTF-8.
    pub encoding: Option<String>,
    /// csv: the columns whose value equal to the NULL string is NULL even
    /// when quoted (COPY's `FORCE_NULL`: `""` is NULL by default), as the
    /// user named them until the load resolves them to the table's names
    /// (`*`: every column loaded).
    pub force_null: Vec<String>,
    /// csv: the columns whose unquoted NULL string is that string, not NULL
    /// (COPY's `FORCE_NOT_NULL`: an empty field is an empty string), named
    /// as in `force_null`.
    pub force_not_null: Vec<String>,
    /// jsonl into typed columns: the records are the documents turned into
    /// text-format lines (see [`documents`]), and these the columns.
    pub documents: Option<std::sync::Arc<documents::DocumentColumns>>,
    /// csv and tsv: the fields each record keeps, where some are left out
    /// (see [`pick`]); the records' field count is then the input's.
    pub picks: Option<std::sync::Arc<pick::FieldPicks>>,
    /// `--decimal-comma`: number columns' values are written with a
    /// decimal comma (see [`convert`]).
    pub decimal_comma: bool,
    /// `--thousands CHAR`: number columns' values are written with this
    /// mark between thousands and a decimal point (see [`convert`]).
    pub thousands: Option<u8>,
    /// `--currency SIGN`: number columns' values may be amounts written
    /// with this sign, negative ones in parentheses (see [`currency`]).
    pub currency: Option<currency::Currency>,
    /// `--percent`: a number with `%` after it in a number column is a
    /// hundredth of it (see [`convert`]).
    pub percent: bool,
    /// `--trailing-minus`: a number with `-` right after its last digit in
    /// a number column is negative (see [`convert`]).
    pub trailing_minus: bool,
    /// `--zero-fractions`: a number with a fraction of zeros (`3.0`) in an
    /// integer column is the integer (see [`convert`]).
    pub zero_fractions: bool,
    /// `--unix-times UNIT|auto`: numbers in date and timestamp columns
    /// count this unit since 1970 (see [`convert`]).
    pub unix_times: Option<convert::UnixTimes>,
    /// `--documents-at PATH`: the documents are the elements of the array
    /// these keys lead to in each top-level object (see [`json_values`]).
    pub documents_at: Option<Vec<String>>,
}

/// Quote and delimiter bytes that valid JSON can never contain raw (control
/// characters must be escaped inside JSON strings), so COPY's CSV mode passes
/// every document through byte for byte. The text format would unescape
/// backslashes, which is how the seeds' 20 GB JSON load mangled its data.
const JSONL_QUOTE: u8 = 0x01;
const JSONL_DELIMITER: u8 = 0x02;

impl FormatOptions {
    /// The field delimiter the file is read at: `--delimiter`, or the
    /// format's own (a comma for csv, a tab for the text format).
    pub fn field_delimiter(&self) -> u8 {
        self.delimiter.unwrap_or(if self.kind == FormatKind::Csv { b',' } else { b'\t' })
    }

    /// These options with another delimiter, to see whether records fit
    /// the columns at it. Commas in a text-format load mean a CSV file
    /// named `.txt` or `.tsv`: read as CSV, whose quotes matter (a text
    /// load at commas would keep them in the values).
    pub fn at_delimiter(&self, delimiter: u8) -> FormatOptions {
        let kind = match (self.kind, delimiter) {
            (FormatKind::Tsv, b',') => FormatKind::Csv,
            (kind, _) => kind,
        };
        FormatOptions { kind, delimiter: Some(delimiter), ..self.clone() }
    }

    /// The flag that gives [`Self::at_delimiter`]'s options, quoted for
    /// the shell.
    pub fn flag_for_delimiter(&self, delimiter: u8) -> String {
        match (self.kind, delimiter) {
            (FormatKind::Tsv, b',') => "--format csv".into(),
            (_, delimiter) => format!("--delimiter '{}'", delimiter_text(delimiter)),
        }
    }

    /// The NULL string as COPY reads it: `--null`, else the format's
    /// own (`\N` in the text format, nothing in CSV and for documents).
    pub fn null_string(&self) -> &str {
        let default = if self.kind == FormatKind::Tsv { "\\N" } else { "" };
        self.null.as_deref().unwrap_or(default)
    }

    pub fn new(kind: FormatKind) -> Self {
        FormatOptions {
            kind,
            delimiter: None,
            quote: None,
            escape: None,
            null: None,
            skip_lines: 0,
            header: false,
            header_in_first_file_only: false,
            encoding: None,
            force_null: Vec::new(),
            force_not_null: Vec::new(),
            documents: None,
            picks: None,
            decimal_comma: false,
            thousands: None,
            currency: None,
            percent: false,
            trailing_minus: false,
            zero_fractions: false,
            unix_times: None,
            documents_at: None,
        }
    }

    /// The options for JSON lines turned into text-format lines for
    /// `columns` (see [`documents`]).
    pub fn reading_documents(&self, columns: documents::DocumentColumns) -> FormatOptions {
        FormatOptions {
            encoding: self.encoding.clone(),
            decimal_comma: self.decimal_comma,
            thousands: self.thousands,
            currency: self.currency,
            percent: self.percent,
            trailing_minus: self.trailing_minus,
            zero_fractions: self.zero_fractions,
            unix_times: self.unix_times,
            documents_at: self.documents_at.clone(),
            documents: Some(std::sync::Arc::new(columns)),
            ..FormatOptions::new(FormatKind::Tsv)
        }
    }

    /// How number columns' values are rewritten, when the user said they
    /// are not written plainly (`--decimal-comma`, `--thousands`,
    /// `--currency`, `--percent`, `--trailing-minus`, `--zero-fractions`).
    pub fn number_conversion(&self) -> Option<convert::Conversion> {
        let writing = self.number_writing();
        (writing != convert::NumberWriting::PLAIN).then_some(convert::Conversion::Number(writing))
    }

    /// How number columns' values are written, as the flags say (plainly
    /// when none is given).
    pub fn number_writing(&self) -> convert::NumberWriting {
        use convert::NumberMarks;
        let marks = match (self.decimal_comma, self.thousands) {
            (true, _) => NumberMarks::DecimalComma,
            (false, Some(mark)) => NumberMarks::Thousands(mark),
            (false, None) => NumberMarks::Plain,
        };
        let (currency, percent, trailing_minus) = (self.currency, self.percent, self.trailing_minus);
        let zero_fractions = self.zero_fractions;
        convert::NumberWriting { marks, currency, percent, trailing_minus, zero_fractions }
    }

    /// These options with numbers written with `marks` (`--decimal-comma`,
    /// `--thousands`, or neither).
    pub fn with_number_marks(self, marks: convert::NumberMarks) -> FormatOptions {
        let (decimal_comma, thousands) = match marks {
            convert::NumberMarks::Plain => (false, None),
            convert::NumberMarks::DecimalComma => (true, None),
            convert::NumberMarks::Thousands(mark) => (false, Some(mark)),
        };
        FormatOptions { decimal_comma, thousands, ..self }
    }

    /// The format as the user knows it: jsonl for documents read into columns.
    pub fn shown_kind(&self) -> FormatKind {
        match self.documents {
            Some(_) => FormatKind::Jsonl,
            None => self.kind,
        }
    }

    /// Rejects option combinations the server would refuse or that would make
    /// our record boundaries differ from the server's.
    pub fn validate(&self) -> Result<(), String> {
        let bytes = [("delimiter", self.delimiter), ("quote", self.quote), ("escape", self.escape)];
        for (name, byte) in bytes {
            if let Some(b) = byte {
                if b == b'\n' || b == b'\r' || !b.is_ascii() {
                    return Err(format!("--{name} must be one ASCII character other than a newline"));
                }
            }
        }
        if let Some(path) = &self.documents_at {
            if self.kind != FormatKind::Jsonl {
                return Err("--documents-at applies to JSON (--format jsonl)".into());
            }
            if path.iter().any(String::is_empty) {
                return Err("--documents-at: name the keys that lead to the documents' array, joined by dots \
                            (data, or hits.hits)"
                    .into());
            }
        }
        if self.skip_lines > 0 && self.kind == FormatKind::Jsonl {
            return Err("--skip-lines applies to csv and tsv; JSON lines have no lines above the documents".into());
        }
        match self.kind {
            FormatKind::Tsv if self.quote.is_some() || self.escape.is_some() => {
                Err("--quote and --escape apply to csv only; tsv escapes with backslashes".into())
            }
            FormatKind::Tsv if self.delimiter == Some(b'\\') => Err("--delimiter cannot be a backslash in tsv".into()),
            FormatKind::Jsonl
                if self.delimiter.is_some() || self.quote.is_some() || self.escape.is_some() || self.null.is_some() =>
            {
                Err("--delimiter, --quote, --escape and --null do not apply to jsonl".into())
            }
            FormatKind::Tsv | FormatKind::Jsonl if !self.force_null.is_empty() || !self.force_not_null.is_empty() => {
                Err("--force-null and --force-not-null apply to csv only, where a quoted field can be told from an \
                     unquoted one"
                    .into())
            }
            _ => Ok(()),
        }
    }

    /// csv: what each record must look like when the COPY has `columns`
    /// columns, for the chunker's open-quote check; `None` for the other
    /// formats (no quotes there).
    pub fn record_shape(&self, columns: usize) -> Option<scan::RecordShape> {
        (self.kind == FormatKind::Csv)
            .then(|| scan::RecordShape { delimiter: self.delimiter.unwrap_or(b','), fields: columns as u64 })
    }

    /// How records end, for the scanner.
    pub fn dialect(&self) -> Dialect {
        match self.kind {
            FormatKind::Csv => {
                let quote = self.quote.unwrap_or(b'"');
                Dialect::Csv { quote, escape: self.escape.unwrap_or(quote) }
            }
            FormatKind::Tsv => Dialect::Text,
            FormatKind::Jsonl => Dialect::Lines,
        }
    }

    /// COPY's option list (name, SQL literal or keyword), only what differs
    /// from the server's defaults, so the generated statement reads like one a
    /// person would write.
    pub fn copy_options(&self) -> Vec<(&'static str, String)> {
        let mut opts = Vec::new();
        let byte = |b: u8| crate::sql::quote_literal(&(b as char).to_string());
        match self.kind {
            FormatKind::Csv => opts.push(("FORMAT", "csv".to_string())),
            FormatKind::Tsv => opts.push(("FORMAT", "text".to_string())),
            FormatKind::Jsonl => {
                opts.push(("FORMAT", "csv".to_string()));
                opts.push(("QUOTE", byte(JSONL_QUOTE)));
                opts.push(("DELIMITER", byte(JSONL_DELIMITER)));
            }
        }
        if let Some(d) = self.delimiter {
            opts.push(("DELIMITER", byte(d)));
        }
        if let Some(q) = self.quote {
            opts.push(("QUOTE", byte(q)));
        }
        if let Some(e) = self.escape {
            opts.push(("ESCAPE", byte(e)));
        }
        if let Some(n) = &self.null {
            opts.push(("NULL", crate::sql::quote_literal(n)));
        }
        let list = |names: &[String]| {
            format!("({})", names.iter().map(|n| crate::sql::quote_ident(n)).collect::<Vec<_>>().join(", "))
        };
        if !self.force_not_null.is_empty() {
            opts.push(("FORCE_NOT_NULL", list(&self.force_not_null)));
        }
        if !self.force_null.is_empty() {
            opts.push(("FORCE_NULL", list(&self.force_null)));
        }
        opts
    }
}

/// Parses a one-character option such as `--delimiter`: a character, or the
/// escapes `\t`, `tab`, `\x01` that shells make awkward to type.
pub fn parse_char_option(value: &str) -> Result<u8, String> {
    let byte = match value {
        "\\t" | "tab" | "TAB" => b'\t',
        v if v.starts_with("\\x") && v.len() == 4 => {
            u8::from_str_radix(&v[2..], 16).map_err(|_| format!("'{v}' is not a \\xHH escape"))?
        }
        v if v.len() == 1 => v.as_bytes()[0],
        v => return Err(format!("'{v}' should be one ASCII character, \\t or \\xHH")),
    };
    Ok(byte)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guesses_format_through_compression_suffixes() {
        assert_eq!(FormatKind::guess(Path::new("a/b.csv.gz")), Some(FormatKind::Csv));
        assert_eq!(FormatKind::guess(Path::new("x.TSV")), Some(FormatKind::Tsv));
        assert_eq!(FormatKind::guess(Path::new("d.ndjson.zst")), Some(FormatKind::Jsonl));
        assert_eq!(FormatKind::guess(Path::new("d.csv.bz2")), Some(FormatKind::Csv));
        assert_eq!(FormatKind::guess(Path::new("d.tsv.xz")), Some(FormatKind::Tsv));
        assert_eq!(FormatKind::guess(Path::new("noext")), None);
        assert_eq!(FormatKind::guess(Path::new("x.parquet")), None);
    }

    #[test]
    fn parses_character_options() {
        assert_eq!(parse_char_option("\\t"), Ok(b'\t'));
        assert_eq!(parse_char_option("|"), Ok(b'|'));
        assert_eq!(parse_char_option("\\x01"), Ok(1));
        assert!(parse_char_option("ab").is_err());
    }

    #[test]
    fn jsonl_copies_as_csv_with_control_quote_and_delimiter() {
        let opts = FormatOptions::new(FormatKind::Jsonl).copy_options();
        assert_eq!(opts[0], ("FORMAT", "csv".to_string()));
        assert_eq!(opts[1], ("QUOTE", "E'\u{1}'".to_string()));
        assert_eq!(opts[2], ("DELIMITER", "E'\u{2}'".to_string()));
    }

    #[test]
    fn rejects_options_that_do_not_apply() {
        let mut o = FormatOptions::new(FormatKind::Tsv);
        o.quote = Some(b'\'');
        assert!(o.validate().is_err());
        let mut o = FormatOptions::new(FormatKind::Csv);
        o.delimiter = Some(b'\n');
        assert!(o.validate().is_err());
        assert!(FormatOptions::new(FormatKind::Csv).validate().is_ok());
    }
}

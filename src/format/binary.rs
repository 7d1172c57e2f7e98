//! Binary COPY: records turned into PostgreSQL's binary tuple format on the
//! client, so the server skips parsing text.
//!
//! Why: on a 2-core machine the server's parsing is the bottleneck, and a
//! binary COPY of the same rows costs the server 0.87× (transactions), 0.70×
//! (TPC-H lineitem) and 0.65× (JSON lines into jsonb) the CPU of a text COPY
//! (bench/README.md). The client pays a field split and a number parse,
//! which is much cheaper than what the server saves.
//!
//! The certainty rule: binary must load exactly what a text COPY of the same
//! bytes loads. The encoder therefore splits fields by the server's own rules
//! (`CopyReadAttributesText` / `CopyReadAttributesCSV`) and converts only
//! values whose text form it reads without doubt: integers, decimals (with
//! an exponent too), dates and timestamps, times (timetz with its offset),
//! intervals as the server prints them, `t`/`f`, hyphenated UUIDs, bytea in
//! either text form, inet addresses that std's parsers read, and
//! one-dimensional arrays of those with plain or plainly quoted elements. Anything
//! else (a numeric's exponent of five digits, a date in a form it does not
//! know, an escape that yields NUL, a line end other than the chunk's first one's
//! (LF or CRLF), a carriage return alone, a wrong field count) is
//! [`Unsure`], and the caller sends the chunk as text, where the server
//! decides as before. Checks that depend on the column's modifier (length of
//! `varchar(n)`, scale of `numeric(p,s)`, NOT NULL, constraints) stay on the
//! server, which applies them to binary input the same way. So binary changes
//! how fast a chunk loads, never what it loads.

mod clean;

use memchr::{memchr, memchr2, memchr3};

use super::{FormatKind, FormatOptions};

/// The binary COPY stream's header: signature, flags, no extension.
pub const HEADER: &[u8] = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";
/// The stream's trailer: a tuple with -1 fields.
pub const TRAILER: &[u8] = &[0xff, 0xff];

/// Why a record could not be encoded with certainty.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsure {
    /// 0-based record within the input given to [`BinaryEncoder::encode`].
    pub record: u64,
    pub reason: String,
}

/// What one call to [`BinaryEncoder::encode`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Encoded {
    /// Input bytes consumed: whole records only.
    pub consumed: usize,
    pub records: u64,
}

/// How one column's text becomes its binary form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    Int2,
    Int4,
    Int8,
    Float4,
    Float8,
    Numeric,
    /// date written `YYYY-MM-DD`; other forms are read again (see
    /// [`reread`]).
    Date,
    /// timestamp written `YYYY-MM-DD HH:MM:SS[.ffffff]`; other forms are
    /// read again (see [`reread`]).
    Timestamp,
    /// timestamptz written with its offset (`Z`, `+HH`, `+HH:MM`, `+HHMM`);
    /// one without is left to the text path, which reads it in the
    /// session's time zone.
    TimestampTz,
    /// timestamptz in a session whose time zone is UTC: one without an
    /// offset is UTC too (see [`BinaryEncoder::bare_timestamps_are_utc`]).
    TimestampTzUtc,
    Time,
    /// timetz written with its offset (`+HH`, `+HH:MM`, `+HHMM`); one
    /// without is left to the text path, which gives it the session time
    /// zone's offset of the day.
    TimeTz,
    /// interval as PostgreSQL prints it (see [`interval`]).
    Interval,
    /// bit and bit varying, as `0`s and `1`s (the server checks the length
    /// against the column's, as for text).
    Bits,
    Bool,
    /// text, varchar, char: the bytes themselves (the server checks the
    /// encoding and the declared length, as for text input).
    Text,
    Json,
    Jsonb,
    Uuid,
    /// bytea in either text form (`\x48656c6c6f`, or escaped: `a\\b\001`).
    Bytea,
    /// inet, IPv4 or IPv6, with or without `/bits`.
    Inet,
    /// cidr, with its `/bits` written and no address bit set past them.
    Cidr,
    /// macaddr and macaddr8 (see [`mac_address`]).
    MacAddr,
    MacAddr8,
    /// A one-dimensional array of one of [`ELEMENTS`].
    Array(&'static Element),
    /// A built-in range of one of [`RANGES`]' subtypes (see [`range_value`]).
    Range(&'static Element),
}

/// Which comes first in a date such as `1/2/2024`, as the session's
/// DateStyle (`ISO, MDY` or `ISO, DMY`) makes the server read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DateOrder {
    MonthFirst,
    DayFirst,
}

impl DateOrder {
    /// The order a DateStyle setting as `SHOW DateStyle` prints it
    /// (`ISO, MDY`, `SQL, DMY`) gives; `None` for year first (`YMD`, whose
    /// reading of a date with two short numbers first is the server's).
    pub fn of_date_style(date_style: &str) -> Option<DateOrder> {
        match date_style.rsplit(',').next()?.trim() {
            "MDY" => Some(DateOrder::MonthFirst),
            "DMY" => Some(DateOrder::DayFirst),
            _ => None,
        }
    }

    /// The other order.
    pub fn other(self) -> DateOrder {
        match self {
            DateOrder::MonthFirst => DateOrder::DayFirst,
            DateOrder::DayFirst => DateOrder::MonthFirst,
        }
    }

    /// The order as DateStyle names it: `MDY` or `DMY`.
    pub fn date_style(self) -> &'static str {
        match self {
            DateOrder::MonthFirst => "MDY",
            DateOrder::DayFirst => "DMY",
        }
    }
}

/// How a session reads the dates and times that leave something unsaid:
/// which of day and month comes first (`1/2/2024`), and whether a
/// timestamptz without an offset is UTC (its TimeZone is).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SessionDates {
    pub order: Option<DateOrder>,
    pub bare_is_utc: bool,
}

/// An array's element type. The binary array names it by OID, which the
/// server checks against the column's: a wrong one is an error, never a
/// value read differently.
#[derive(Debug, PartialEq, Eq)]
pub struct Element {
    /// The type as `format_type` prints it, modifier left out.
    name: &'static str,
    oid: u32,
    codec: Codec,
}

/// The element types arrays are encoded for (bit strings, whose length
/// the column's modifier checks, are left to the server). OIDs are
/// PostgreSQL's fixed ones for built-in types.
static ELEMENTS: [Element; 24] = [
    Element { name: "smallint", oid: 21, codec: Codec::Int2 },
    Element { name: "integer", oid: 23, codec: Codec::Int4 },
    Element { name: "bigint", oid: 20, codec: Codec::Int8 },
    Element { name: "real", oid: 700, codec: Codec::Float4 },
    Element { name: "double precision", oid: 701, codec: Codec::Float8 },
    Element { name: "numeric", oid: 1700, codec: Codec::Numeric },
    Element { name: "date", oid: 1082, codec: Codec::Date },
    Element { name: "timestamp without time zone", oid: 1114, codec: Codec::Timestamp },
    Element { name: "timestamp with time zone", oid: 1184, codec: Codec::TimestampTz },
    Element { name: "time without time zone", oid: 1083, codec: Codec::Time },
    Element { name: "time with time zone", oid: 1266, codec: Codec::TimeTz },
    Element { name: "interval", oid: 1186, codec: Codec::Interval },
    Element { name: "boolean", oid: 16, codec: Codec::Bool },
    Element { name: "text", oid: 25, codec: Codec::Text },
    Element { name: "character varying", oid: 1043, codec: Codec::Text },
    Element { name: "character", oid: 1042, codec: Codec::Text },
    Element { name: "uuid", oid: 2950, codec: Codec::Uuid },
    Element { name: "inet", oid: 869, codec: Codec::Inet },
    Element { name: "cidr", oid: 650, codec: Codec::Cidr },
    Element { name: "macaddr", oid: 829, codec: Codec::MacAddr },
    Element { name: "macaddr8", oid: 774, codec: Codec::MacAddr8 },
    Element { name: "json", oid: 114, codec: Codec::Json },
    Element { name: "jsonb", oid: 3802, codec: Codec::Jsonb },
    Element { name: "bytea", oid: 17, codec: Codec::Bytea },
];

/// timestamptz elements in a session whose time zone is UTC (see
/// [`BinaryEncoder::bare_timestamps_are_utc`]).
static TIMESTAMPTZ_IN_UTC: Element =
    Element { name: "timestamp with time zone", oid: 1184, codec: Codec::TimestampTzUtc };

/// The built-in range types, each with its subtype's codec (the OID is the
/// range type's own, for reference: a binary range names no type).
static RANGES: [Element; 6] = [
    Element { name: "int4range", oid: 3904, codec: Codec::Int4 },
    Element { name: "int8range", oid: 3926, codec: Codec::Int8 },
    Element { name: "numrange", oid: 3906, codec: Codec::Numeric },
    Element { name: "daterange", oid: 3912, codec: Codec::Date },
    Element { name: "tsrange", oid: 3908, codec: Codec::Timestamp },
    Element { name: "tstzrange", oid: 3910, codec: Codec::TimestampTz },
];

/// tstzrange in a session whose time zone is UTC.
static TSTZRANGE_IN_UTC: Element = Element { name: "tstzrange", oid: 3910, codec: Codec::TimestampTzUtc };

impl Codec {
    /// The codec for a type as `format_type` prints it, if there is one.
    pub fn for_type(sql_type: &str) -> Option<Codec> {
        let base = without_modifier(sql_type);
        if let Some(element) = base.strip_suffix("[]") {
            return ELEMENTS.iter().find(|e| e.name == element).map(Codec::Array);
        }
        if let Some(range) = RANGES.iter().find(|r| r.name == base) {
            return Some(Codec::Range(range));
        }
        Some(match base.as_str() {
            "smallint" => Codec::Int2,
            "integer" => Codec::Int4,
            "bigint" => Codec::Int8,
            "real" => Codec::Float4,
            "double precision" => Codec::Float8,
            "numeric" => Codec::Numeric,
            "date" => Codec::Date,
            "timestamp without time zone" => Codec::Timestamp,
            "timestamp with time zone" => Codec::TimestampTz,
            "time without time zone" => Codec::Time,
            "time with time zone" => Codec::TimeTz,
            "interval" => Codec::Interval,
            "bit" | "bit varying" => Codec::Bits,
            "boolean" => Codec::Bool,
            // An enum's binary input is its label's text, checked as text
            // COPY checks it (`anyenum`: see `TableInfo::encoded_columns`).
            "text" | "character varying" | "character" | "bpchar" | "anyenum" => Codec::Text,
            "json" => Codec::Json,
            "jsonb" => Codec::Jsonb,
            "uuid" => Codec::Uuid,
            "bytea" => Codec::Bytea,
            "inet" => Codec::Inet,
            "cidr" => Codec::Cidr,
            "macaddr" => Codec::MacAddr,
            "macaddr8" => Codec::MacAddr8,
            _ => return None,
        })
    }
}

impl Codec {
    /// The type's name as the user knows it, for messages.
    pub fn sql_name(self) -> &'static str {
        match self {
            Codec::Int2 => "smallint",
            Codec::Int4 => "integer",
            Codec::Int8 => "bigint",
            Codec::Float4 => "real",
            Codec::Float8 => "double precision",
            Codec::Numeric => "numeric",
            Codec::Date => "date",
            Codec::Timestamp => "timestamp",
            Codec::TimestampTz | Codec::TimestampTzUtc => "timestamptz",
            Codec::Time => "time",
            Codec::TimeTz => "timetz",
            Codec::Interval => "interval",
            Codec::Bits => "bit",
            Codec::Bool => "boolean",
            Codec::Text => "text",
            Codec::Json => "json",
            Codec::Jsonb => "jsonb",
            Codec::Uuid => "uuid",
            Codec::Bytea => "bytea",
            Codec::Inet => "inet",
            Codec::Cidr => "cidr",
            Codec::MacAddr => "macaddr",
            Codec::MacAddr8 => "macaddr8",
            Codec::Array(_) => "array",
            Codec::Range(range) => range.name,
        }
    }

    /// Whether the server's text input for this type costs more than the
    /// client's encoding of it. Measured with 2 workers (bench/README.md):
    /// numeric + date (lineitem) and jsonb (cname) load faster as binary;
    /// integers + text (transactions) load no faster (2.50 s both ways, 10
    /// loads each: the client's split costs what the server saves) and send
    /// a third more bytes, a length word per field. Floats, timestamps and
    /// json have parse-heavy text input like numeric and jsonb: 5 M rows of
    /// (bigint, timestamptz, time, text) took one psql session 5.5 s as
    /// text and 2.5 s as binary.
    pub fn pays(self) -> bool {
        matches!(
            self,
            Codec::Numeric
                | Codec::Date
                | Codec::Timestamp
                | Codec::TimestampTz
                | Codec::TimestampTzUtc
                | Codec::Time
                | Codec::TimeTz
                | Codec::Interval
                | Codec::Float4
                | Codec::Float8
                | Codec::Json
                | Codec::Jsonb
                | Codec::Range(_)
        )
    }
}

/// The numbers of a type's modifier as `format_type` writes it:
/// `numeric(15,2)` → `[15, 2]`; `timestamp(3) without time zone` → `[3]`;
/// `text` → `[]`.
pub(crate) fn type_modifiers(sql_type: &str) -> Vec<i64> {
    match (sql_type.find('('), sql_type.find(')')) {
        (Some(open), Some(close)) if open < close => {
            sql_type[open + 1..close].split(',').filter_map(|n| n.trim().parse().ok()).collect()
        }
        _ => Vec::new(),
    }
}

/// `numeric(15,2)` → `numeric`; `timestamp(3) without time zone` →
/// `timestamp without time zone`.
pub(crate) fn without_modifier(sql_type: &str) -> String {
    match (sql_type.find('('), sql_type.find(')')) {
        (Some(open), Some(close)) if open < close => format!("{}{}", &sql_type[..open], &sql_type[close + 1..]),
        _ => sql_type.to_string(),
    }
}

/// The format's splitting rules.
#[derive(Clone, Debug)]
struct Rules {
    kind: Layout,
    delimiter: u8,
    quote: u8,
    escape: u8,
    null: Vec<u8>,
    /// Bytes that stop the skip over ordinary bytes.
    special: [bool; 256],
    /// Whether [`clean::records`] may take lines of this format (JSON lines
    /// have a single field and no delimiter).
    clean_lines: bool,
    /// Whether a clean line can hold the NULL string (else it is not
    /// looked for there).
    null_in_clean_lines: bool,
    /// The text format's default NULL string `\N`: a clean line may hold
    /// it (see [`clean`]). Not another NULL string with a backslash: one
    /// ending in a backslash would escape the delimiter after it.
    escaped_null: bool,
    /// CSV whose escape is its quote: a clean line may hold quoted fields
    /// without a quote, delimiter or line end inside (see [`clean`]). With
    /// another escape a quote before the closing one could be escaped.
    quoted_in_clean_lines: bool,
    /// CSV's `FORCE_NULL` and `FORCE_NOT_NULL`, per column in COPY order
    /// (empty when none is forced).
    forced: Vec<Forced>,
}

/// How a CSV column reads the NULL string, when the user forced it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Forced {
    /// Quoted, it is NULL too.
    null: bool,
    /// Unquoted, it is the string itself.
    not_null: bool,
}

impl Rules {
    /// Whether the quoted value `value` of column `column` is NULL.
    #[inline]
    fn quoted_is_null(&self, column: usize, value: &[u8]) -> bool {
        self.forced.get(column).is_some_and(|f| f.null) && value == self.null.as_slice()
    }

    /// Whether the unquoted `raw` of column `column` is NULL.
    #[inline]
    fn unquoted_is_null(&self, column: usize, raw: &[u8]) -> bool {
        raw == self.null.as_slice() && !self.forced.get(column).is_some_and(|f| f.not_null)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    Text,
    Csv,
    /// One JSON document per line (COPY's CSV mode with control-byte quote
    /// and delimiter, so an empty line is NULL).
    Line,
}

impl Rules {
    fn new(format: &FormatOptions) -> Rules {
        let (kind, delimiter, quote, null) = match format.kind {
            FormatKind::Tsv => (Layout::Text, format.delimiter.unwrap_or(b'\t'), 0, format.null_string()),
            FormatKind::Csv => {
                (Layout::Csv, format.delimiter.unwrap_or(b','), format.quote.unwrap_or(b'"'), format.null_string())
            }
            FormatKind::Jsonl => (Layout::Line, 0, 0, ""),
        };
        let stops = match kind {
            Layout::Text => [delimiter, b'\\', b'\n', b'\r', 0],
            Layout::Csv => [delimiter, quote, b'\n', b'\r', 0],
            Layout::Line => [0; 5],
        };
        let mut special = [false; 256];
        for b in stops {
            special[b as usize] = true;
        }
        let escape = format.escape.unwrap_or(quote);
        let clean_lines = kind != Layout::Line;
        let unclean = if kind == Layout::Csv { quote } else { b'\\' };
        let null_in_clean_lines = !null.bytes().any(|b| b == unclean || b == b'\r' || b == 0);
        let escaped_null = kind == Layout::Text && null == "\\N";
        let quoted_in_clean_lines = kind == Layout::Csv && escape == quote;
        let null = null.as_bytes().to_vec();
        Rules {
            kind,
            delimiter,
            quote,
            escape,
            null,
            special,
            clean_lines,
            null_in_clean_lines,
            escaped_null,
            quoted_in_clean_lines,
            forced: Vec::new(),
        }
    }

    /// The first special byte at or after `from`, or the end.
    #[inline]
    fn next_special(&self, input: &[u8], from: usize) -> usize {
        from + input[from..].iter().position(|&b| self.special[b as usize]).unwrap_or(input.len() - from)
    }
}

/// A split that cannot go on: more input needed, or a record to leave to
/// the text path.
enum Stop {
    NeedMore,
    Unsure(String),
}

impl From<&str> for Stop {
    fn from(reason: &str) -> Self {
        Stop::Unsure(reason.to_string())
    }
}

/// Encodes records of one format into binary tuples for one column list.
#[derive(Clone, Debug)]
pub struct BinaryEncoder {
    rules: Rules,
    split: Split,
    work: clean::Workspace,
}

impl BinaryEncoder {
    /// An encoder for `columns` (name, `format_type` text) in COPY order, or
    /// the reason binary cannot be used for them.
    pub fn new(columns: &[(String, String)], format: &FormatOptions) -> Result<BinaryEncoder, String> {
        let mut codecs = Vec::with_capacity(columns.len());
        for (name, sql_type) in columns {
            match Codec::for_type(sql_type) {
                Some(codec) => codecs.push(codec),
                None => return Err(format!("column \"{name}\" has type {sql_type}, which sluice does not encode")),
            }
        }
        if format.kind == FormatKind::Jsonl && codecs.len() != 1 {
            return Err("json lines fill exactly one column".into());
        }
        let split = Split { codecs, date_order: None, column: 0, scratch: Vec::new(), eol: Eol::Unknown };
        let mut rules = Rules::new(format);
        if !format.force_null.is_empty() || !format.force_not_null.is_empty() {
            let named = |names: &[String], column: &str| names.iter().any(|n| n == column);
            rules.forced = columns
                .iter()
                .map(|(name, _)| Forced {
                    null: named(&format.force_null, name),
                    not_null: named(&format.force_not_null, name),
                })
                .collect();
        }
        Ok(BinaryEncoder { rules, split, work: clean::Workspace::default() })
    }

    /// For a session whose DateStyle reads day and month in `order`: date
    /// and timestamp columns take dates written so too (`12/31/2024`,
    /// `31.12.2024 13:45`), as the server does.
    pub fn dates_in_order(mut self, order: DateOrder) -> BinaryEncoder {
        self.split.date_order = Some(order);
        self
    }

    /// For a session whose time zone is UTC (an alias of it): a timestamptz
    /// without an offset reads as UTC there, so the encoder converts it too.
    pub fn bare_timestamps_are_utc(mut self) -> BinaryEncoder {
        for codec in &mut self.split.codecs {
            match *codec {
                Codec::TimestampTz => *codec = Codec::TimestampTzUtc,
                Codec::Array(e) if e.codec == Codec::TimestampTz => *codec = Codec::Array(&TIMESTAMPTZ_IN_UTC),
                Codec::Range(r) if r.codec == Codec::TimestampTz => *codec = Codec::Range(&TSTZRANGE_IN_UTC),
                _ => {}
            }
        }
        self
    }

    /// For a session that reads dates and times as `dates` says (see
    /// [`Self::dates_in_order`] and [`Self::bare_timestamps_are_utc`]).
    pub fn reading(self, dates: SessionDates) -> BinaryEncoder {
        let encoder = match dates.bare_is_utc {
            true => self.bare_timestamps_are_utc(),
            false => self,
        };
        match dates.order {
            Some(order) => encoder.dates_in_order(order),
            None => encoder,
        }
    }

    /// Whether binary pays for these columns: when at least a quarter of
    /// them have text input that costs the server more than their encoding
    /// costs sluice (see [`Codec::pays`]). Every other field costs sluice
    /// its split and saves the server little. Measured with 2 workers
    /// against text COPY: TPC-H lineitem (7 of 16) 6.5 s against 7.7 s;
    /// events (2 of 4) 1.8 s against 3.0 s; store_sales (1 of 16) 2.7 s
    /// both ways; flights (3 numeric of 29, most lines with a `\N` that
    /// takes the exact splitter) 2.9 s against 2.5 s.
    pub fn pays(&self) -> bool {
        let paying = self.split.codecs.iter().filter(|c| c.pays()).count();
        4 * paying >= self.split.codecs.len()
    }

    /// Forgets the line ends of the chunk before: each chunk is a COPY of
    /// its own, and the server takes a COPY's line end (LF or CRLF) from its
    /// first line. Call it before a chunk's first [`encode`](Self::encode).
    pub fn begin_chunk(&mut self) {
        self.split.eol = Eol::Unknown;
    }

    /// Encodes the whole records at the front of `input` (all of it when
    /// `at_end`: the last record may lack its newline) and appends their
    /// tuples to `out`. On [`Unsure`], `out` holds the tuples of the records
    /// before it.
    pub fn encode(&mut self, input: &[u8], at_end: bool, out: &mut Vec<u8>) -> Result<Encoded, Unsure> {
        let mut done = Encoded::default();
        while done.consumed < input.len() {
            // The chunk's first record goes through the exact splitter, which
            // learns its line end; after it, the clean records up to the
            // first that is not, which the exact splitter takes.
            if self.rules.clean_lines && self.split.eol != Eol::Unknown {
                let rest = &input[done.consumed..];
                let crlf = self.split.eol == Eol::CrLf;
                let columns = clean::Columns { codecs: &self.split.codecs, date_order: self.split.date_order };
                let (len, records) = clean::records(columns, &self.rules, rest, crlf, &mut self.work, out);
                done.consumed += len;
                done.records += records;
                if done.consumed == input.len() {
                    break;
                }
            }
            let rest = &input[done.consumed..];
            let unsure = |reason| Unsure { record: done.records, reason };
            let tuple = out.len();
            let len = match self.split.record(&self.rules, rest, at_end, out) {
                Ok(len) => len,
                Err(stop) => {
                    out.truncate(tuple);
                    match stop {
                        Stop::NeedMore => break,
                        Stop::Unsure(reason) => return Err(unsure(reason)),
                    }
                }
            };
            done.consumed += len;
            done.records += 1;
        }
        Ok(done)
    }
}

/// How the lines of a chunk end, as the server decides it: by the first line
/// end of the COPY (PostgreSQL's `CopyReadLineText`). After an LF line a
/// carriage return is an error; after a CRLF line so is a line feed alone
/// (both go to the text path, whose COPY gives the server's own error). A
/// carriage return alone (old Macs) is left to the text path too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Eol {
    Unknown,
    Lf,
    CrLf,
}

/// Splits one record and encodes each field as soon as it ends, in one
/// pass that also finds where the record ends, by the server's rules (the
/// property tests check those ends against the record scanner's reference).
#[derive(Clone, Debug)]
struct Split {
    codecs: Vec<Codec>,
    /// How the session reads a date with day and month first, if it does
    /// (see [`reread`]).
    date_order: Option<DateOrder>,
    /// The next field's column.
    column: usize,
    /// A field's value after unescaping or unquoting.
    scratch: Vec<u8>,
    /// The line end of the chunk's records, once its first one ended.
    eol: Eol,
}

impl Split {
    /// Appends the tuple of the record at the front of `input` to `out`;
    /// returns the record's length with its newline. On a stop, `out` may
    /// hold part of the tuple: the caller cuts it off.
    fn record(&mut self, rules: &Rules, input: &[u8], at_end: bool, out: &mut Vec<u8>) -> Result<usize, Stop> {
        self.column = 0;
        out.extend_from_slice(&(self.codecs.len() as i16).to_be_bytes());
        let len = match rules.kind {
            Layout::Text => self.text(rules, input, at_end, out),
            Layout::Csv => self.csv(rules, input, at_end, out),
            Layout::Line => self.line(input, at_end, out),
        }?;
        match self.column == self.codecs.len() {
            true => Ok(len),
            false => Err(Stop::Unsure(format!("{} fields for {} columns", self.column, self.codecs.len()))),
        }
    }

    /// Encodes the next field (`None`: NULL).
    #[inline]
    fn emit(&mut self, value: Option<&[u8]>, out: &mut Vec<u8>) -> Result<(), Stop> {
        let Some(&codec) = self.codecs.get(self.column) else { return Err("more fields than columns".into()) };
        self.column += 1;
        match value {
            None => {
                out.extend_from_slice(&(-1i32).to_be_bytes());
                Ok(())
            }
            Some(v) => encode_or_reread(codec, v, self.date_order, out),
        }
    }

    /// Encodes the field held in scratch.
    fn emit_scratch(&mut self, out: &mut Vec<u8>) -> Result<(), Stop> {
        let value = std::mem::take(&mut self.scratch);
        let result = self.emit(Some(&value), out);
        self.scratch = value;
        result
    }

    /// PostgreSQL's text format: a backslash escapes the next byte (newline
    /// included); the raw field equal to the NULL string is NULL.
    fn text(&mut self, rules: &Rules, input: &[u8], at_end: bool, out: &mut Vec<u8>) -> Result<usize, Stop> {
        let (mut start, mut at, mut escaped) = (0, 0, false);
        loop {
            at = rules.next_special(input, at);
            let Some(&b) = input.get(at) else {
                if !at_end {
                    return Err(Stop::NeedMore);
                }
                self.text_field(rules, &input[start..at], escaped, out)?;
                return Ok(at);
            };
            match b {
                b'\\' if at + 1 < input.len() => {
                    escaped = true;
                    at += 2;
                }
                b'\\' if at_end => return Err("a backslash at the end of the data".into()),
                b'\\' => return Err(Stop::NeedMore),
                b'\n' | b'\r' => {
                    let len = self.line_end(input, at, at_end)?;
                    self.text_field(rules, &input[start..at], escaped, out)?;
                    return Ok(at + len);
                }
                b if b == rules.delimiter => {
                    self.text_field(rules, &input[start..at], escaped, out)?;
                    (start, at, escaped) = (at + 1, at + 1, false);
                }
                _ => return Err("a NUL byte (the text path decides)".into()),
            }
        }
    }

    fn text_field(&mut self, rules: &Rules, raw: &[u8], escaped: bool, out: &mut Vec<u8>) -> Result<(), Stop> {
        if raw == rules.null.as_slice() {
            self.emit(None, out)
        } else if escaped {
            self.scratch.clear();
            unescape_text(raw, &mut self.scratch).map_err(Stop::Unsure)?;
            self.emit_scratch(out)
        } else {
            self.emit(Some(raw), out)
        }
    }

    /// PostgreSQL's CSV: a quote may open anywhere in a field; quoted bytes
    /// hold delimiters and newlines; inside quotes the escape byte escapes a
    /// quote or itself. An unquoted field equal to the NULL string is NULL.
    fn csv(&mut self, rules: &Rules, input: &[u8], at_end: bool, out: &mut Vec<u8>) -> Result<usize, Stop> {
        if input.starts_with(b"\\.\n") || input.starts_with(b"\\.\r") || (at_end && input == b"\\.") {
            return Err("an end-of-data marker".into());
        }
        let (mut start, mut at) = (0, 0);
        // Once the field has had a quote (its value then builds up in
        // scratch): where its bytes not yet copied there begin.
        let mut quoted_from: Option<usize> = None;
        loop {
            at = rules.next_special(input, at);
            let Some(&b) = input.get(at) else {
                if !at_end {
                    return Err(Stop::NeedMore);
                }
                self.csv_field(rules, &input[start..at], quoted_from.map(|q| &input[q..at]), out)?;
                return Ok(at);
            };
            if b == rules.quote {
                if quoted_from.is_none() {
                    self.scratch.clear();
                }
                self.scratch.extend_from_slice(&input[quoted_from.unwrap_or(start)..at]);
                at = self.quoted(rules, input, at + 1, at_end)?;
                quoted_from = Some(at);
            } else if b == b'\n' || b == b'\r' {
                let len = self.line_end(input, at, at_end)?;
                self.csv_field(rules, &input[start..at], quoted_from.map(|q| &input[q..at]), out)?;
                return Ok(at + len);
            } else if b == rules.delimiter {
                self.csv_field(rules, &input[start..at], quoted_from.take().map(|q| &input[q..at]), out)?;
                (start, at) = (at + 1, at + 1);
            } else {
                return Err("an unquoted NUL byte (the text path decides)".into());
            }
        }
    }

    /// The length of the line end at `input[at]` (a line feed or a carriage
    /// return outside quotes and escapes) when it is the chunk's kind (the
    /// first one sets it).
    fn line_end(&mut self, input: &[u8], at: usize, at_end: bool) -> Result<usize, Stop> {
        let (eol, len) = match (input[at], input.get(at + 1)) {
            (b'\n', _) => (Eol::Lf, 1),
            (_, Some(b'\n')) => (Eol::CrLf, 2),
            (_, None) if !at_end => return Err(Stop::NeedMore),
            _ => return Err("a carriage return that does not end a CRLF line (the text path decides)".into()),
        };
        match (self.eol, eol) {
            (Eol::Unknown, _) => self.eol = eol,
            (Eol::Lf, Eol::CrLf) => return Err("a CRLF line end after LF ones (the text path decides)".into()),
            (Eol::CrLf, Eol::Lf) => return Err("an LF line end after CRLF ones (the text path decides)".into()),
            _ => {}
        }
        Ok(len)
    }

    /// Copies a quoted part (after its opening quote) to scratch; returns
    /// where it ends, past the closing quote.
    fn quoted(&mut self, rules: &Rules, input: &[u8], mut at: usize, at_end: bool) -> Result<usize, Stop> {
        let (quote, escape) = (rules.quote, rules.escape);
        loop {
            let Some(i) = memchr3(quote, escape, 0, &input[at..]) else {
                return Err(if at_end { "an unterminated quoted field".into() } else { Stop::NeedMore });
            };
            self.scratch.extend_from_slice(&input[at..at + i]);
            at += i;
            let c = input[at];
            if c == 0 {
                return Err("a NUL byte in a quoted field".into());
            }
            if c == escape {
                match input.get(at + 1) {
                    Some(&n) if n == escape || n == quote => {
                        self.scratch.push(n);
                        at += 2;
                        continue;
                    }
                    None if !at_end => return Err(Stop::NeedMore),
                    _ => {}
                }
            }
            if c == quote {
                return Ok(at + 1);
            }
            self.scratch.push(c);
            at += 1;
        }
    }

    /// Encodes a CSV field: `raw` as it is in the input; `tail`, when the
    /// field had quotes, its bytes after the last one (the rest of its value
    /// is in scratch). Unquoted, the NULL string is NULL; quoted, it is a
    /// value; unless the column is forced (see [`Forced`]).
    fn csv_field(&mut self, rules: &Rules, raw: &[u8], tail: Option<&[u8]>, out: &mut Vec<u8>) -> Result<(), Stop> {
        match tail {
            Some(tail) => {
                self.scratch.extend_from_slice(tail);
                match rules.quoted_is_null(self.column, &self.scratch) {
                    true => self.emit(None, out),
                    false => self.emit_scratch(out),
                }
            }
            None if rules.unquoted_is_null(self.column, raw) => self.emit(None, out),
            None => self.emit(Some(raw), out),
        }
    }

    /// A JSON-lines record: the whole line is the one field; an empty line is
    /// NULL, as COPY's CSV mode reads it.
    fn line(&mut self, input: &[u8], at_end: bool, out: &mut Vec<u8>) -> Result<usize, Stop> {
        let (end, len) = match memchr(b'\n', input) {
            // The line's carriage return, if any, is its line end's (CRLF).
            Some(i) => match i.checked_sub(1).filter(|&cr| input[cr] == b'\r') {
                Some(cr) => (cr, cr + self.line_end(input, cr, at_end)?),
                None => (i, i + self.line_end(input, i, at_end)?),
            },
            None if at_end => (input.len(), input.len()),
            None => return Err(Stop::NeedMore),
        };
        let line = &input[..end];
        if line == b"\\." || memchr3(b'\r', 0x01, 0x02, line).is_some() || memchr(0, line).is_some() {
            return Err("a carriage return, control byte or end-of-data marker".into());
        }
        // An empty line is an empty document (never NULL), as in the text
        // path's COPY statement: the server refuses it and it is rejected.
        self.emit(Some(line), out)?;
        Ok(len)
    }
}

/// `CopyReadAttributesText`'s escapes, appended to `value`: octal, `\x`
/// hex, control letters, and any other byte taken literally. A NUL result or
/// `\.` is unsure (the text path treats both specially).
pub(crate) fn unescape_text(raw: &[u8], value: &mut Vec<u8>) -> Result<(), String> {
    let mut i = 0;
    while i < raw.len() {
        let Some(k) = memchr(b'\\', &raw[i..]) else {
            value.extend_from_slice(&raw[i..]);
            break;
        };
        value.extend_from_slice(&raw[i..i + k]);
        i += k + 1;
        let c = raw[i];
        i += 1;
        let byte = match c {
            b'0'..=b'7' => {
                let mut v = u32::from(c - b'0');
                for _ in 0..2 {
                    match raw.get(i) {
                        Some(&d @ b'0'..=b'7') => {
                            v = v * 8 + u32::from(d - b'0');
                            i += 1;
                        }
                        _ => break,
                    }
                }
                (v & 0xff) as u8
            }
            b'x' if raw.get(i).is_some_and(u8::is_ascii_hexdigit) => {
                let mut v = 0u32;
                for _ in 0..2 {
                    match raw.get(i).and_then(|d| (*d as char).to_digit(16)) {
                        Some(d) => {
                            v = v * 16 + d;
                            i += 1;
                        }
                        None => break,
                    }
                }
                v as u8
            }
            b'b' => 8,
            b'f' => 12,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'v' => 11,
            b'.' => return Err("an end-of-data marker".into()),
            other => other,
        };
        if byte == 0 {
            return Err("an escape that yields a NUL byte".into());
        }
        value.push(byte);
    }
    Ok(())
}

/// Appends one field (see [`encode_value`]); for a value it does not read,
/// the value without the spaces around it (see [`unpadded`]) or, for a
/// date or timestamp, [`reread`]. The exact path's counterpart of
/// `clean::field_or_reread`.
fn encode_or_reread(codec: Codec, v: &[u8], date_order: Option<DateOrder>, out: &mut Vec<u8>) -> Result<(), Stop> {
    let before = out.len();
    encode_value(codec, v, out).or_else(|reason| {
        out.truncate(before);
        if let Some(unpadded) = unpadded(codec, v) {
            return encode_or_reread(codec, unpadded, date_order, out);
        }
        let Some(value) = reread(codec, v, date_order) else {
            let bare = codec == Codec::TimestampTz && reread(Codec::TimestampTzUtc, v, date_order).is_some();
            return Err(Stop::Unsure(if bare { without_offset(v) } else { reason }));
        };
        value.write(|bytes| put(out, bytes));
        Ok(())
    })
}

/// The value a date, timestamp or timestamptz column takes from `text`
/// (days, or microseconds, from 2000-01-01; UTC for timestamptz), as the
/// encoder reads it for the server: to compare two records' keys on the
/// client (`load::key_check`). `None` where the encoder leaves the value
/// to the server, and for any other codec.
pub(crate) fn time_value(codec: Codec, text: &[u8], order: Option<DateOrder>) -> Option<i64> {
    if !matches!(codec, Codec::Date | Codec::Timestamp | Codec::TimestampTz | Codec::TimestampTzUtc) {
        return None;
    }
    let mut out = Vec::with_capacity(12);
    encode_or_reread(codec, text, order, &mut out).ok()?;
    match out.get(4..)? {
        &[a, b, c, d] => Some(i32::from_be_bytes([a, b, c, d]).into()),
        value => Some(i64::from_be_bytes(value.try_into().ok()?)),
    }
}

/// The value without the white space at either end (`" 10.50"`, as
/// hand-written CSV puts after each comma; `"   42"`, as fixed-width
/// reports pad numbers), for the types whose input functions skip it:
/// numbers, booleans, dates and times. `None` when there is none, or
/// nothing else. Only ASCII white space: the server's `isspace` may take
/// other bytes in a single-byte locale, and those values are left to it.
/// Tried only after the value failed as it stands.
#[cold]
fn unpadded(codec: Codec, text: &[u8]) -> Option<&[u8]> {
    let skips_spaces = matches!(
        codec,
        Codec::Int2
            | Codec::Int4
            | Codec::Int8
            | Codec::Float4
            | Codec::Float8
            | Codec::Numeric
            | Codec::Bool
            | Codec::Date
            | Codec::Timestamp
            | Codec::TimestampTz
            | Codec::TimestampTzUtc
            | Codec::Time
            | Codec::TimeTz
            | Codec::Interval
    );
    let space = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r');
    if !skips_spaces || !(text.first().is_some_and(space) || text.last().is_some_and(space)) {
        return None;
    }
    let start = text.iter().position(|b| !space(b))?;
    let end = text.iter().rposition(|b| !space(b))? + 1;
    Some(&text[start..end])
}

/// Appends one field: its length, then its binary value.
fn encode_value(codec: Codec, text: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    let ok = match codec {
        Codec::Int2 => integer(text, i16::MIN.into(), i16::MAX.into()).map(|v| put(out, &(v as i16).to_be_bytes())),
        Codec::Int4 => integer(text, i32::MIN.into(), i32::MAX.into()).map(|v| put(out, &(v as i32).to_be_bytes())),
        Codec::Int8 => integer(text, i64::MIN, i64::MAX).map(|v| put(out, &v.to_be_bytes())),
        Codec::Float4 => {
            float(text).filter(|v| !v.is_finite() || f32_exact(text)).map(|v| put(out, &(v as f32).to_be_bytes()))
        }
        Codec::Float8 => float(text).map(|v| put(out, &v.to_be_bytes())),
        Codec::Numeric => numeric(text, out).or_else(|| numeric_with_exponent(text, out)),
        Codec::Date => iso_date(text).map(|d| put(out, &(d as i32).to_be_bytes())),
        Codec::Timestamp => timestamp(text).map(|t| put(out, &t.to_be_bytes())),
        Codec::TimestampTz => timestamptz(text, false).map(|t| put(out, &t.to_be_bytes())),
        Codec::TimestampTzUtc => timestamptz(text, true).map(|t| put(out, &t.to_be_bytes())),
        Codec::Time => time_of_day(text).map(|t| put(out, &t.to_be_bytes())),
        Codec::TimeTz => time_with_offset(text).map(|value| put(out, &value)),
        Codec::Interval => interval(text).map(|v| put(out, &v.binary())),
        Codec::Bits => bits(text, out),
        Codec::Bool => boolean(text).map(|b| put(out, &[u8::from(b)])),
        Codec::Text | Codec::Json => {
            put(out, text);
            Some(())
        }
        Codec::Jsonb => {
            out.extend_from_slice(&(text.len() as i32 + 1).to_be_bytes());
            out.push(1);
            out.extend_from_slice(text);
            Some(())
        }
        Codec::Uuid => uuid(text).map(|u| put(out, &u)),
        Codec::Bytea => bytea(text, out),
        Codec::Inet => network(text, false, out),
        Codec::Cidr => network(text, true, out),
        Codec::MacAddr => mac_address(text, false, out),
        Codec::MacAddr8 => mac_address(text, true, out),
        Codec::Array(element) => array(element, text, out),
        Codec::Range(range) => range_value(range, text, out),
    };
    ok.ok_or_else(|| match codec {
        Codec::TimestampTz if timestamptz(text, true).is_some() => without_offset(text),
        _ => format!("a value sluice does not read with certainty as {}: {:?}", codec.sql_name(), preview(text)),
    })
}

/// Why a timestamptz without an offset goes as text, where the session's
/// time zone is not UTC.
fn without_offset(text: &[u8]) -> String {
    format!("a timestamptz without an offset ({:?}), which the server reads in the session's time zone", preview(text))
}

/// A field's length and bytes.
#[inline]
fn put(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
    out.extend_from_slice(bytes);
}

fn preview(text: &[u8]) -> String {
    String::from_utf8_lossy(&text[..text.len().min(40)]).into_owned()
}

/// `[-+]digits` within `min..=max`; no spaces, underscores or hex.
fn integer(text: &[u8], min: i64, max: i64) -> Option<i64> {
    let (negative, digits) = match text.split_first()? {
        (b'-', rest) => (true, rest),
        (b'+', rest) => (false, rest),
        _ => (false, text),
    };
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    let mut magnitude = 0u64;
    for &d in digits {
        let d = d.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        magnitude = magnitude * 10 + u64::from(d);
    }
    let v = if negative { -i128::from(magnitude) } else { i128::from(magnitude) };
    (i128::from(min)..=i128::from(max)).contains(&v).then_some(v as i64)
}

/// `[-+]digits[.digits][e[-+]digits]` (digits on one side of the point may
/// be missing, as in `.5`), finite and normal (the server refuses what
/// overflows and reads subnormals its own way), or one of the words of
/// [`float_word`].
pub(super) fn float(text: &[u8]) -> Option<f64> {
    // Numbers first: the words are rare, and a number never spells one.
    finite_float(text).or_else(|| float_word(text))
}

fn finite_float(text: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(text).ok()?;
    let body = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits_ok = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
    let exp_ok = exponent.map_or(true, |e| {
        let e = e.strip_prefix(['-', '+']).unwrap_or(e);
        !e.is_empty() && e.len() <= 4 && digits_ok(e)
    });
    if int.is_empty() && frac.is_empty() || !digits_ok(int) || !digits_ok(frac) || !exp_ok {
        return None;
    }
    let v: f64 = s.parse().ok()?;
    (v == 0.0 && mantissa.bytes().all(|b| b == b'0' || b == b'.') || v.is_normal()).then_some(v)
}

/// `NaN` and `Infinity` or `inf` with a sign or not, in any case, as the
/// server reads them (NumPy and R write `nan` and `inf`). A sign before
/// `NaN` is left to the server, whose C library keeps it in the value's bits.
fn float_word(text: &[u8]) -> Option<f64> {
    if text.eq_ignore_ascii_case(b"nan") {
        return Some(f64::NAN);
    }
    let (sign, word) = match text.split_first()? {
        (b'-', word) => (-1.0, word),
        (b'+', word) => (1.0, word),
        _ => (1.0, text),
    };
    (word.eq_ignore_ascii_case(b"infinity") || word.eq_ignore_ascii_case(b"inf")).then_some(sign * f64::INFINITY)
}

/// A float4 read through f64 then narrowed can differ from reading it as
/// f32 directly (double rounding); accept only when both agree and it is
/// normal in f32. Zero only when the text is zero: the server refuses a
/// value too small for real (`1e-46`) as out of range, where the
/// narrowing gives 0.
fn f32_exact(text: &[u8]) -> bool {
    let Ok(s) = std::str::from_utf8(text) else { return false };
    match (s.parse::<f32>(), s.parse::<f64>()) {
        (Ok(direct), Ok(wide)) => direct == wide as f32 && ((direct == 0.0 && wide == 0.0) || direct.is_normal()),
        _ => false,
    }
}

/// PostgreSQL's binary numeric: base-10000 digits, weight of the first,
/// sign and display scale. From `[-+]digits[.digits]` only (an exponent
/// is [`numeric_with_exponent`]'s; NaN and infinity the server's); the
/// server rounds to the column's scale as it does for text.
fn numeric(text: &[u8], out: &mut Vec<u8>) -> Option<()> {
    let (negative, body) = match text.split_first()? {
        (b'-', rest) => (true, rest),
        (b'+', rest) => (false, rest),
        _ => (false, text),
    };
    let (int, frac) = match memchr(b'.', body) {
        Some(i) => (&body[..i], &body[i + 1..]),
        None => (body, &body[..0]),
    };
    let all_digits = |d: &[u8]| d.iter().all(u8::is_ascii_digit);
    if int.len() + frac.len() == 0 || body.len() > 1000 || !all_digits(int) || !all_digits(frac) {
        return None;
    }
    let int = &int[int.iter().position(|&d| d != b'0').unwrap_or(int.len())..];
    // Digits left-padded to whole groups before the point, right-padded
    // after: `digit(k)` is the k-th of them.
    let pad = (4 - int.len() % 4) % 4;
    let digit = |k: usize| -> i16 {
        let d = match k.checked_sub(pad) {
            None => b'0',
            Some(k) if k < int.len() => int[k],
            Some(k) => frac.get(k - int.len()).copied().unwrap_or(b'0'),
        };
        i16::from(d - b'0')
    };
    let length = out.len();
    let header = length + 4;
    out.extend_from_slice(&[0; 12]);
    let mut weight = ((pad + int.len()) / 4) as i16 - 1;
    let (mut written, mut significant) = (0, 0);
    for g in 0..(pad + int.len() + frac.len()).div_ceil(4) {
        let k = g * 4;
        let group = digit(k) * 1000 + digit(k + 1) * 100 + digit(k + 2) * 10 + digit(k + 3);
        if written == 0 && group == 0 {
            weight -= 1;
            continue;
        }
        out.extend_from_slice(&group.to_be_bytes());
        written += 1;
        if group != 0 {
            significant = written;
        }
    }
    out.truncate(header + 8 + 2 * significant);
    if significant == 0 {
        weight = 0;
    }
    let sign: u16 = if negative && significant > 0 { 0x4000 } else { 0 };
    out[header..header + 2].copy_from_slice(&(significant as i16).to_be_bytes());
    out[header + 2..header + 4].copy_from_slice(&weight.to_be_bytes());
    out[header + 4..header + 6].copy_from_slice(&sign.to_be_bytes());
    out[header + 6..header + 8].copy_from_slice(&(frac.len() as i16).to_be_bytes());
    out[length..header].copy_from_slice(&((8 + 2 * significant) as i32).to_be_bytes());
    Some(())
}

/// A numeric written with an exponent (`1.5e3`, `3.2E-05`; Python writes
/// floats below 1e-4 and from 1e16 so), as the server reads it (see
/// [`exponent_written_out`]).
fn numeric_with_exponent(text: &[u8], out: &mut Vec<u8>) -> Option<()> {
    let pieces = exponent_written_out(text)?;
    match short_decimal_of(&pieces) {
        Some((decimal, length)) => numeric(&decimal[..length], out),
        None => numeric(&pieces.concat(), out),
    }
}

/// A numeric written with an exponent, written out in pieces as the server
/// reads it: the digits with the point moved, and as many after it as the
/// mantissa had less the exponent (none below zero), so `1.50e1` is
/// `15.0`. `None` for an exponent of more than four digits, or one that
/// the server would write out past a thousand digits: left to it.
pub(super) fn exponent_written_out(text: &[u8]) -> Option<[&[u8]; 5]> {
    let at = text.iter().position(|&b| b == b'e' || b == b'E')?;
    let (mantissa, exponent) = (&text[..at], &text[at + 1..]);
    let (negative_exponent, exponent_digits) = match exponent.split_first()? {
        (b'-', rest) => (true, rest),
        (b'+', rest) => (false, rest),
        _ => (false, exponent),
    };
    if exponent_digits.is_empty() || exponent_digits.len() > 4 {
        return None;
    }
    let exponent = digits_value(exponent_digits)? * if negative_exponent { -1 } else { 1 };
    let (sign, body) = match mantissa.split_first()? {
        (b'-' | b'+', rest) => (&mantissa[..1], rest),
        _ => (&mantissa[..0], mantissa),
    };
    let (int, frac) = match memchr(b'.', body) {
        Some(i) => (&body[..i], &body[i + 1..]),
        None => (body, &body[..0]),
    };
    let count = int.len() + frac.len();
    let all_digits = |d: &[u8]| d.iter().all(u8::is_ascii_digit);
    if count == 0 || !all_digits(int) || !all_digits(frac) {
        return None;
    }
    // Where the point goes among the digits.
    let point = int.len() as i64 + exponent;
    if !(-1000..=1000).contains(&point) {
        return None;
    }
    static ZEROS: [u8; 1000] = [b'0'; 1000];
    let (p, i) = (point.unsigned_abs() as usize, int.len());
    Some(match point {
        ..=0 => [sign, b"0.", &ZEROS[..p], int, frac],
        _ if p >= count => [sign, int, frac, &ZEROS[..p - count], b""],
        _ if p <= i => [sign, &int[..p], b".", &int[p..], frac],
        _ => [sign, int, &frac[..p - i], b".", &frac[p - i..]],
    })
}

/// The pieces of [`exponent_written_out`] joined on the stack, with their
/// length, when they fit [`SHORT_DECIMAL`]: a heap buffer for each value
/// cost a fifth of sluice's CPU (2 M values: 0.47 s against 0.37 s), and a
/// buffer the size of the longest would cost its zeroing for each value.
pub(super) fn short_decimal_of(pieces: &[&[u8]; 5]) -> Option<([u8; SHORT_DECIMAL], usize)> {
    let length: usize = pieces.iter().map(|p| p.len()).sum();
    if length > SHORT_DECIMAL {
        return None;
    }
    let mut decimal = [0; SHORT_DECIMAL];
    let mut at = 0;
    for piece in pieces {
        decimal[at..at + piece.len()].copy_from_slice(piece);
        at += piece.len();
    }
    Some((decimal, length))
}

/// A numeric with an exponent written out to at most this many bytes is
/// joined on the stack.
const SHORT_DECIMAL: usize = 64;

/// Days from 2000-01-01 (PostgreSQL's epoch) to a civil date.
#[cfg(test)]
fn days_since_2000(year: i64, month: i64, day: i64) -> i64 {
    // Howard Hinnant's days_from_civil, shifted from 1970 to 2000.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468 - 10_957
}

fn digits_value(text: &[u8]) -> Option<i64> {
    text.iter().all(u8::is_ascii_digit).then(|| text.iter().fold(0, |acc, &d| acc * 10 + i64::from(d - b'0')))
}

/// Where `YYYY-MM-` has its dashes.
const DASHES: u64 = 0xff00_00ff_0000_0000;

/// Whether every byte of `values` (bytes XORed with `0`) is below 10, that
/// is, was a digit (no carry between bytes: the low seven bits plus 0x76
/// stay below 0x100).
#[inline]
fn digit_values(values: u64) -> bool {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    (((values & LOW7) + 0x7676_7676_7676_7676) | values) & !LOW7 == 0
}

/// `YYYY-MM-DD`, year 1 to 9999, a real day of the month, as days from
/// 2000-01-01. Written for speed (a date column is read once per row): the
/// eight digits are checked together and the day count uses unsigned
/// division by constants; the test checks it against Hinnant's algorithm.
pub(crate) fn iso_date(text: &[u8]) -> Option<i64> {
    let (Some(head), &[d1, d2]) = (text.first_chunk::<8>(), text.get(8..)?) else { return None };
    // Each byte's digit value, and 0 for each dash, when the text fits the
    // pattern; one check for the eight bytes instead of one per byte
    // (lineitem's three dates: 159 ns a record against 156).
    let values = u64::from_le_bytes(*head) ^ u64::from_le_bytes(*b"0000-00-");
    let (d1, d2) = (u32::from(d1.wrapping_sub(b'0')), u32::from(d2.wrapping_sub(b'0')));
    if !digit_values(values) | (values & DASHES != 0) | (d1 > 9) | (d2 > 9) {
        return None;
    }
    // Two-digit numbers from neighbouring bytes: the year's at bytes 0 and
    // 2, the month's at byte 5.
    let pairs = values * 10 + (values >> 8);
    let year = ((pairs & 0xff) * 100 + ((pairs >> 16) & 0xff)) as u32;
    let (month, day) = (((pairs >> 40) & 0xff) as u32, d1 * 10 + d2);
    checked_days_since_2000(year, month, day)
}

/// A date of year 1 to 9999 as days from 2000-01-01, if the day exists.
#[inline]
fn checked_days_since_2000(year: u32, month: u32, day: u32) -> Option<i64> {
    const DAYS_BEFORE_MONTH: [u32; 12] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
    const MONTH_DAYS: [u32; 12] = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    /// Days from 0001-01-01 to 2000-01-01.
    const EPOCH: i64 = 730_119;
    let year_start = *YEAR_STARTS.get(year as usize)?;
    let leap = year_start & 1 == 1;
    // Non-short-circuit `&` and `|`: years and months are random in real
    // data, and a branch on them is mispredicted half the time.
    let index = month.wrapping_sub(1) as usize;
    let month_days = *MONTH_DAYS.get(index)? + u32::from(leap & (month == 2));
    if (year == 0) | (day == 0) | (day > month_days) {
        return None;
    }
    let days = (year_start >> 1) + DAYS_BEFORE_MONTH[index] + u32::from(leap & (month > 2)) + day - 1;
    Some(i64::from(days) - EPOCH)
}

/// For each year 0 to 9999, the days from 0001-01-01 to its first day
/// (shifted left by one) and whether it is a leap year (the low bit): one
/// load instead of five divisions by constants per date (lineitem, three
/// dates a record: 125.6-128.4 ns a record against 133.4-137.3, `cargo
/// bench --bench encoding`, alternated 4 times).
static YEAR_STARTS: [u32; 10_000] = {
    let mut starts = [0u32; 10_000];
    let mut year = 1;
    while year < 10_000 {
        let before = year - 1;
        let leap = (year % 4 == 0) && (year % 100 != 0 || year % 400 == 0);
        starts[year as usize] = (365 * before + before / 4 - before / 100 + before / 400) << 1 | leap as u32;
        year += 1;
    }
    starts
};

/// A date with its day and month first in `order`, then the year:
/// `12/31/2024` or `31/12/2024`, with `/`, `-` or `.` between (the same
/// twice), day and month of one or two digits, and a year of four digits
/// (1 to 9999) or two (`24` is 2024, `70` 1970, as the server reads them),
/// as days from 2000-01-01. Other forms (a year of one, three or five
/// digits, a month name, `BC`, spaces) are the text path's. US and European
/// exports write dates so, and their whole file went as text (2 M rows of
/// two such dates and two decimals: 1.35 s as text, 0.93 s as binary, `psql
/// \copy` 1.81 s; bench/README.md).
fn ordered_date(text: &[u8], order: DateOrder) -> Option<i64> {
    let separator = *text.iter().find(|b| !b.is_ascii_digit())?;
    if !matches!(separator, b'/' | b'-' | b'.') {
        return None;
    }
    let mut parts = text.split(|&b| b == separator);
    let (first, second, year) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || !(1..=2).contains(&first.len()) || !(1..=2).contains(&second.len()) {
        return None;
    }
    let (first, second) = (digits_value(first)? as u32, digits_value(second)? as u32);
    let (month, day) = match order {
        DateOrder::MonthFirst => (first, second),
        DateOrder::DayFirst => (second, first),
    };
    checked_days_since_2000(written_year(year)?, month, day)
}

/// A year after the day and month: four digits, or two (`24` is 2024, `70`
/// 1970, as the server reads them).
fn written_year(year: &[u8]) -> Option<u32> {
    match (year.len(), digits_value(year)? as u32) {
        (4, year) => Some(year),
        (2, year) if year < 70 => Some(2000 + year),
        (2, year) => Some(1900 + year),
        _ => None,
    }
}

/// A date with a four-digit year first and a month and day of one or two
/// digits (`2024-1-5`, `2024/12/31`, `2024.1.05`; the same separator
/// twice), as days from 2000-01-01: the server reads a year of more than two
/// digits first as year, month, day whatever its DateStyle. Exports that
/// drop leading zeros write dates so.
fn year_first_date(text: &[u8]) -> Option<i64> {
    let (year, rest) = text.split_first_chunk::<4>()?;
    let (&separator, rest) = rest.split_first()?;
    if !matches!(separator, b'/' | b'-' | b'.') {
        return None;
    }
    let (month, day) = rest.split_at(rest.iter().position(|&b| b == separator)?);
    let day = &day[1..];
    if !(1..=2).contains(&month.len()) || !(1..=2).contains(&day.len()) {
        return None;
    }
    let (year, month, day) = (digits_value(year)?, digits_value(month)?, digits_value(day)?);
    checked_days_since_2000(year as u32, month as u32, day as u32)
}

const MICROS_PER_DAY: i64 = 86_400_000_000;

/// `YYYY-MM-DD HH:MM:SS[.ffffff]` (or `T` between), as microseconds from
/// 2000-01-01 00:00.
fn timestamp(text: &[u8]) -> Option<i64> {
    match leading_timestamp(text)? {
        (micros, []) => Some(micros),
        _ => None,
    }
}

/// A timestamp with its offset from UTC (`Z`, `+HH`, `+HH:MM`, `+HHMM`, up
/// to 15 hours as the server allows), or without one when `bare_is_utc`, as
/// microseconds from 2000-01-01 00:00 UTC.
fn timestamptz(text: &[u8], bare_is_utc: bool) -> Option<i64> {
    in_utc(leading_timestamp(text)?, bare_is_utc)
}

/// A local timestamp (microseconds) and the offset written after it (see
/// [`timestamptz`]), as microseconds from 2000-01-01 00:00 UTC.
#[inline]
fn in_utc((local, offset): (i64, &[u8]), bare_is_utc: bool) -> Option<i64> {
    let east = match offset {
        [] if bare_is_utc => 0,
        b"Z" => 0,
        _ => seconds_east(offset).or_else(|| names_utc(offset).then_some(0)).or_else(|| spaced_offset(offset))?,
    };
    Some(local - east * 1_000_000)
}

/// An offset after a space (see [`seconds_east`]), as SQL Server writes a
/// datetimeoffset (`2024-03-13 10:00:00.0000000 +01:00`) and git a date.
fn spaced_offset(offset: &[u8]) -> Option<i64> {
    seconds_east(offset.strip_prefix(b" ")?)
}

/// `UTC` or `GMT` after a space or not, in any case, as BigQuery's and
/// other exports end a timestamp: zero hours east, whichever abbreviations
/// the session uses (the server falls back to the zone of that name).
fn names_utc(offset: &[u8]) -> bool {
    let name = offset.strip_prefix(b" ").unwrap_or(offset);
    name.eq_ignore_ascii_case(b"UTC") || name.eq_ignore_ascii_case(b"GMT")
}

/// A date or timestamp from [`reread`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Reread {
    /// Days from 2000-01-01.
    Days(i32),
    /// Microseconds from 2000-01-01 00:00.
    Micros(i64),
}

impl Reread {
    /// Calls `write` with the binary form. Each arm's is of a size known
    /// where `write` is inlined: a copy of a length known only at run time
    /// calls `memcpy` (US dates: 132-158 ns a record against 114-128).
    #[inline]
    pub(super) fn write<R>(self, write: impl FnOnce(&[u8]) -> R) -> R {
        match self {
            Reread::Days(days) => write(&days.to_be_bytes()),
            Reread::Micros(micros) => write(&micros.to_be_bytes()),
        }
    }
}

/// The second reading of a date or timestamp that the first (`YYYY-MM-DD`,
/// `YYYY-MM-DD HH:MM:SS[.ffffff]`) did not take: the other forms exports
/// write and the server reads as well. Dates with day and month first in
/// the session's `order` (`12/31/2024`, `31.12.24`; see [`ordered_date`]),
/// a month's name (`13-MAR-24`; see [`named_month_date`]), eight digits
/// (`20240313`; see [`compact_date`]) or a year first and a one-digit month
/// or day (`2024-1-5`; see [`year_first_date`]), and times of day with a
/// one-digit hour, without seconds or on a 12-hour clock (`1:45 PM`; see
/// [`clock_time`]), in timestamps and `time` columns alike. Such a file
/// went as text whole.
/// Out of line and tried only after the first reading failed, so that ISO
/// values pay nothing for it.
#[inline(never)]
pub(super) fn reread(codec: Codec, text: &[u8], order: Option<DateOrder>) -> Option<Reread> {
    match codec {
        // The first reading was the ISO one.
        Codec::Date => year_first_date(text)
            .or_else(|| compact_date(text))
            .or_else(|| ordered_date(text, order?))
            .or_else(|| order.and_then(|_| named_month_date(text)))
            .or_else(|| date_of_timestamp(text, order))
            .map(|days| Reread::Days(days as i32)),
        Codec::Timestamp => match any_timestamp(text, order)? {
            (micros, []) => Some(Reread::Micros(micros)),
            _ => None,
        },
        Codec::TimestampTz => in_utc(any_timestamp(text, order)?, false).map(Reread::Micros),
        Codec::TimestampTzUtc => in_utc(any_timestamp(text, order)?, true).map(Reread::Micros),
        // The server reads a time of day as it reads a timestamp's (and
        // drops an offset, which is left to it).
        Codec::Time => match clock_time(text)? {
            (micros, []) => Some(Reread::Micros(micros)),
            _ => None,
        },
        _ => None,
    }
}

/// `YYYY-MM-DD`, a year first with a shorter month or day, `YYYYMMDD`, or
/// day and month first in `order` (digits or the month's name), as days
/// from 2000-01-01.
fn any_date(text: &[u8], order: Option<DateOrder>) -> Option<i64> {
    iso_date(text)
        .or_else(|| year_first_date(text))
        .or_else(|| compact_date(text))
        .or_else(|| ordered_date(text, order?))
        .or_else(|| order.and_then(|_| named_month_date(text)))
}

/// `YYYYMMDD`, eight digits and nothing else, as days from 2000-01-01:
/// data warehouses and Google Analytics export dates so, and the server
/// reads them whatever its DateStyle.
fn compact_date(text: &[u8]) -> Option<i64> {
    let [y1, y2, y3, y4, m1, m2, d1, d2] = *text else { return None };
    let year = digits_value(&[y1, y2, y3, y4])? as u32;
    checked_days_since_2000(year, digits_value(&[m1, m2])? as u32, digits_value(&[d1, d2])? as u32)
}

/// A day, the month's English name or abbreviation in any case, and a year
/// (`13-MAR-24`, `5/march/2024`; `-`, `/` or `.` between, the same twice),
/// as days from 2000-01-01. Oracle writes its `DATE`s so by default
/// (`DD-MON-RR`). With a month's name the server reads the number before
/// it as the day in both `MDY` and `DMY`; in `YMD` as the year, so
/// [`any_date`] leaves such dates to it there. The year as in
/// [`written_year`].
fn named_month_date(text: &[u8]) -> Option<i64> {
    let day_digits = text.iter().take(3).take_while(|b| b.is_ascii_digit()).count();
    let (&separator, rest) = text.get(day_digits..)?.split_first()?;
    if !(1..=2).contains(&day_digits) || !matches!(separator, b'/' | b'-' | b'.') {
        return None;
    }
    let (name, year) = rest.split_at(memchr(separator, rest)?);
    let month = month_number(name)?;
    checked_days_since_2000(written_year(&year[1..])?, month, digits_value(&text[..day_digits])? as u32)
}

/// A month's number from its English name or abbreviation, in any case, as
/// the server's table of date words has them (`sept` too). By its first
/// three letters: comparing the name with each month's took a quarter of
/// the encoder's time on a file of such dates.
fn month_number(name: &[u8]) -> Option<u32> {
    const NAMES: [&[u8]; 12] = [
        b"january",
        b"february",
        b"march",
        b"april",
        b"may",
        b"june",
        b"july",
        b"august",
        b"september",
        b"october",
        b"november",
        b"december",
    ];
    let [a, b, c, ..] = name else { return None };
    let number = match [a.to_ascii_lowercase(), b.to_ascii_lowercase(), c.to_ascii_lowercase()] {
        [b'j', b'a', b'n'] => 1,
        [b'f', b'e', b'b'] => 2,
        [b'm', b'a', b'r'] => 3,
        [b'a', b'p', b'r'] => 4,
        [b'm', b'a', b'y'] => 5,
        [b'j', b'u', b'n'] => 6,
        [b'j', b'u', b'l'] => 7,
        [b'a', b'u', b'g'] => 8,
        [b's', b'e', b'p'] => 9,
        [b'o', b'c', b't'] => 10,
        [b'n', b'o', b'v'] => 11,
        [b'd', b'e', b'c'] => 12,
        _ => return None,
    };
    let whole = name.len() == 3 || name.eq_ignore_ascii_case(NAMES[number as usize - 1]);
    (whole || number == 9 && name.eq_ignore_ascii_case(b"sept")).then_some(number)
}

/// The date of a timestamp without an offset (see [`any_timestamp`]), as
/// exports of other databases' `DATE`, which holds a time, write it
/// (`2024-03-13 00:00:00`): the server reads the time and keeps the date.
fn date_of_timestamp(text: &[u8], order: Option<DateOrder>) -> Option<i64> {
    match any_timestamp(text, order)? {
        (micros, []) => Some(micros.div_euclid(MICROS_PER_DAY)),
        _ => None,
    }
}

/// A date (see [`any_date`]) and a time of day after a space (or after a
/// `T` that follows an ISO date), as microseconds from 2000-01-01 00:00,
/// and what follows the time; a date alone is its midnight. (A `T` after a
/// letter is in a month's name: `OCT`.)
fn any_timestamp(text: &[u8], order: Option<DateOrder>) -> Option<(i64, &[u8])> {
    let gap =
        text.iter().enumerate().position(|(at, &b)| b == b' ' || b == b'T' && at > 0 && text[at - 1].is_ascii_digit());
    let Some(gap) = gap else {
        return Some((any_date(text, order)? * MICROS_PER_DAY, &[]));
    };
    let date = &text[..gap];
    let days = match text[gap] {
        b'T' => iso_date(date).or_else(|| year_first_date(date))?,
        _ => any_date(date, order)?,
    };
    let (micros, rest) = clock_time(&text[gap + 1..])?;
    Some((days * MICROS_PER_DAY + micros, rest))
}

/// A time of day as clocks and spreadsheets write it: an hour of one or two
/// digits, minutes, seconds or not (`H:MM`, `HH:MM:SS[.ffffff]`), then
/// `AM` or `PM` (any case, after a space or not) for a 12-hour clock; as
/// microseconds from midnight, and what follows it. `12 AM` is midnight,
/// `12 PM` noon, as the server reads them. Nothing may follow `AM` or
/// `PM`: the server reads `AM-08` as a POSIX time zone named AM, eight
/// hours east.
fn clock_time(text: &[u8]) -> Option<(i64, &[u8])> {
    let hour_digits = text.iter().take(3).take_while(|b| b.is_ascii_digit()).count();
    if !(1..=2).contains(&hour_digits) || text.get(hour_digits) != Some(&b':') {
        return None;
    }
    let hour = digits_value(&text[..hour_digits])?;
    let after_hour = &text[hour_digits + 1..];
    let (micros, rest) = match leading_minutes_and_seconds(after_hour) {
        Some(read) => read,
        None => {
            // Minutes alone. What follows them must be `AM`, `PM` or an
            // offset, so `13:45.5` (minutes and seconds to the server) and
            // `13:45:6` are refused below.
            let [m1, m2, rest @ ..] = after_hour else { return None };
            let minutes = digits_value(&[*m1, *m2]).filter(|&m| m <= 59)?;
            (minutes * 60_000_000, rest)
        }
    };
    let (pm, rest) = match meridiem(rest) {
        Some((pm, [])) if hour <= 12 => (Some(pm), &[][..]),
        Some(_) => return None,
        None if hour <= 23 => (None, rest),
        None => return None,
    };
    let hour = match pm {
        Some(pm) => hour % 12 + if pm { 12 } else { 0 },
        None => hour,
    };
    Some((hour * 3_600_000_000 + micros, rest))
}

/// `AM` or `PM` at the front of `text` (any case, after one space or none,
/// and no letter after it): whether it is `PM`, and what follows it.
fn meridiem(text: &[u8]) -> Option<(bool, &[u8])> {
    let word = text.strip_prefix(b" ").unwrap_or(text);
    let [first, m, rest @ ..] = word else { return None };
    let pm = match (first.to_ascii_lowercase(), m.to_ascii_lowercase()) {
        (b'a', b'm') => false,
        (b'p', b'm') => true,
        _ => return None,
    };
    match rest.first() {
        Some(b) if b.is_ascii_alphabetic() => None,
        _ => Some((pm, rest)),
    }
}

/// An offset from UTC written `+HH`, `+HH:MM` or `+HHMM` (or with `-`), up
/// to 15:59 as the server allows, in seconds east of Greenwich.
fn seconds_east(offset: &[u8]) -> Option<i64> {
    let [sign @ (b'+' | b'-'), hh @ ..] = offset else { return None };
    let (h, m) = match hh {
        [_, _] => (digits_value(hh)?, 0),
        [h1, h2, b':', m1, m2] | [h1, h2, m1, m2] => (digits_value(&[*h1, *h2])?, digits_value(&[*m1, *m2])?),
        _ => return None,
    };
    if h > 15 || m > 59 {
        return None;
    }
    let seconds = h * 3600 + m * 60;
    Some(if *sign == b'-' { -seconds } else { seconds })
}

/// timetz's binary form, from `HH:MM:SS[.ffffff]` and its offset (see
/// [`seconds_east`]): microseconds from midnight, then the zone in seconds
/// west of Greenwich, as the server keeps it.
fn time_with_offset(text: &[u8]) -> Option<[u8; 12]> {
    let (micros, offset) = leading_time_of_day(text)?;
    let west = -(seconds_east(offset).or_else(|| spaced_offset(offset))? as i32);
    let mut value = [0; 12];
    value[..8].copy_from_slice(&micros.to_be_bytes());
    value[8..].copy_from_slice(&west.to_be_bytes());
    Some(value)
}

/// An interval's three parts, as the server keeps them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Interval {
    micros: i64,
    days: i32,
    months: i32,
}

impl Interval {
    fn binary(self) -> [u8; 16] {
        let mut value = [0; 16];
        value[..8].copy_from_slice(&self.micros.to_be_bytes());
        value[8..12].copy_from_slice(&self.days.to_be_bytes());
        value[12..].copy_from_slice(&self.months.to_be_bytes());
        value
    }
}

/// Most digits read in an interval's number: years, months, days and
/// hours this long cannot overflow the server's fields.
const INTERVAL_DIGITS: usize = 6;

/// An interval as PostgreSQL prints it in its default style, `[N year[s]]
/// [N mon[s]] [N day[s]] [[-|+]H:MM:SS[.ffffff]]` (`1 year 2 mons`, `-3
/// days +04:05:06.5`, `-00:00:01`): parts in that order, one space apart,
/// each number signed or not and of at most six digits. `month[s]` is read
/// too. Anything else the server reads (`1 hour`, `1.5 days`, `P1D`, `@ 1
/// day ago`, upper case, a unitless number) is the text path's. So is a
/// first part negative with no other part signed: under `IntervalStyle =
/// sql_standard` its sign applies to every part, in the default style to
/// its own.
fn interval(text: &[u8]) -> Option<Interval> {
    let mut value = Interval::default();
    let mut words = text.split(|&b| b == b' ');
    // Parts are read in order: 0 years, 1 months, 2 days, 3 the time.
    let mut next = 0;
    let (mut parts, mut first_negative, mut others_signed) = (0, false, false);
    while let Some(word) = words.next() {
        let (sign, digits) = match word.split_first()? {
            (b'-', rest) => (Some(-1), rest),
            (b'+', rest) => (Some(1), rest),
            _ => (None, word),
        };
        if parts == 0 {
            first_negative = sign == Some(-1);
        } else {
            others_signed |= sign.is_some();
        }
        parts += 1;
        let sign = sign.unwrap_or(1);
        if next == 4 {
            return None;
        }
        if digits.contains(&b':') {
            value.micros = sign * interval_time(digits)?;
            next = 4;
            continue;
        }
        if digits.is_empty() || digits.len() > INTERVAL_DIGITS {
            return None;
        }
        let number = (sign * digits_value(digits)?) as i32;
        let slot = match words.next()? {
            b"year" | b"years" => 0,
            b"mon" | b"mons" | b"month" | b"months" => 1,
            b"day" | b"days" => 2,
            _ => return None,
        };
        if slot < next {
            return None;
        }
        next = slot + 1;
        match slot {
            0 => value.months += 12 * number,
            1 => value.months += number,
            _ => value.days = number,
        }
    }
    (!(first_negative && parts > 1 && !others_signed)).then_some(value)
}

/// An interval's time part, `H:MM:SS[.ffffff]` with up to six digits of
/// hours (an interval's hours run past 24), as microseconds.
fn interval_time(text: &[u8]) -> Option<i64> {
    let colon = memchr(b':', text)?;
    let (hours, clock) = (&text[..colon], &text[colon + 1..]);
    if hours.is_empty() || hours.len() > INTERVAL_DIGITS {
        return None;
    }
    match leading_minutes_and_seconds(clock)? {
        (micros, []) => Some(digits_value(hours)? * 3_600_000_000 + micros),
        _ => None,
    }
}

/// The timestamp at the front of `text` (date, ` ` or `T`, time of day) as
/// microseconds from 2000-01-01 00:00, and what follows it. A date alone is
/// its midnight, as the server reads it (date-only columns exported into a
/// timestamp column would otherwise send every chunk as text).
fn leading_timestamp(text: &[u8]) -> Option<(i64, &[u8])> {
    if text.len() == 10 {
        return Some((iso_date(text)? * MICROS_PER_DAY, &[]));
    }
    if text.len() < 19 || !matches!(text[10], b' ' | b'T') {
        return None;
    }
    let days = iso_date(&text[..10])?;
    let (micros, rest) = leading_time_of_day(&text[11..])?;
    Some((days * MICROS_PER_DAY + micros, rest))
}

/// `HH:MM:SS[.ffffff]`, as microseconds from midnight (`24:00:00` and
/// leap seconds go to the text path).
fn time_of_day(text: &[u8]) -> Option<i64> {
    match leading_time_of_day(text)? {
        (micros, []) => Some(micros),
        _ => None,
    }
}

/// The time of day at the front of `text`, and what follows it.
fn leading_time_of_day(text: &[u8]) -> Option<(i64, &[u8])> {
    let [h1, h2, b':', rest @ ..] = text else { return None };
    let h = digits_value(&[*h1, *h2])?;
    if h > 23 {
        return None;
    }
    let (micros, rest) = leading_minutes_and_seconds(rest)?;
    Some((h * 3_600_000_000 + micros, rest))
}

/// `MM:SS[.fff]` at the front of `text`, as microseconds, and what follows
/// it (a fraction past microseconds rounded as the server rounds it).
#[inline]
fn leading_minutes_and_seconds(text: &[u8]) -> Option<(i64, &[u8])> {
    let [m1, m2, b':', s1, s2, rest @ ..] = text else { return None };
    let (m, s) = (digits_value(&[*m1, *m2])?, digits_value(&[*s1, *s2])?);
    if m > 59 || s > 59 {
        return None;
    }
    let micros = (m * 60 + s) * 1_000_000;
    let [b'.', fraction @ ..] = rest else { return Some((micros, rest)) };
    let digits = fraction.iter().take_while(|b| b.is_ascii_digit()).count();
    let fraction_micros = match digits {
        1..=6 => digits_value(&fraction[..digits])? * 10i64.pow(6 - digits as u32),
        _ => rounded_micros(&fraction[..digits])?,
    };
    Some((micros + fraction_micros, &fraction[digits..]))
}

/// Most digits of a fraction of a second read here; the server's field
/// buffer refuses far longer ones.
const FRACTION_DIGITS_MAX: usize = 24;

/// A fraction of a second past microseconds (pandas writes nanoseconds), as
/// the server rounds it: `rint(strtod(".fff") * 1000000)`, ties to even.
/// A fraction that rounds up to a whole second goes to the server, which
/// carries it into the next second (or day).
///
/// The digits past microseconds decide the rounding on their own, except
/// within a billionth of a microsecond of a half, where the server's
/// doubles (off by less than 2e-10 of a microsecond) may round either way:
/// only there is the server's arithmetic repeated (parsing the double took
/// a third of the encoder's time on a file of nanosecond timestamps).
#[cold]
fn rounded_micros(digits: &[u8]) -> Option<i64> {
    if !(7..=FRACTION_DIGITS_MAX).contains(&digits.len()) {
        return None;
    }
    let whole = digits_value(&digits[..6])?;
    // The next nine digits: how far past `whole`, in billionths.
    let past = (6..15).fold(0, |n, i| n * 10 + digits.get(i).map_or(0, |&d| i64::from(d - b'0')));
    let micros = match past {
        ..=499_999_998 => whole,
        500_000_001.. => whole + 1,
        _ => doubles_rounded_micros(digits)?,
    };
    (micros < 1_000_000).then_some(micros)
}

/// The server's own arithmetic, for fractions next to a half.
fn doubles_rounded_micros(digits: &[u8]) -> Option<i64> {
    let mut decimal = [b'0'; FRACTION_DIGITS_MAX + 2];
    decimal[1] = b'.';
    decimal[2..2 + digits.len()].copy_from_slice(digits);
    let fraction: f64 = std::str::from_utf8(&decimal[..2 + digits.len()]).ok()?.parse().ok()?;
    Some((fraction * 1e6).round_ties_even() as i64)
}

/// bit and bit varying: the number of bits, then the bits from the first,
/// eight to a byte, the last byte padded with zeros.
fn bits(text: &[u8], out: &mut Vec<u8>) -> Option<()> {
    if text.iter().any(|&b| b != b'0' && b != b'1') {
        return None;
    }
    let bytes = text.len().div_ceil(8);
    out.extend_from_slice(&(4 + bytes as i32).to_be_bytes());
    out.extend_from_slice(&(text.len() as i32).to_be_bytes());
    for group in text.chunks(8) {
        let byte = group.iter().enumerate().fold(0u8, |acc, (i, &b)| acc | (u8::from(b == b'1') << (7 - i)));
        out.push(byte);
    }
    Some(())
}

/// The words exports write for a boolean, in any case (`TRUE` from
/// spreadsheets, `True` from Python, `Y`, `yes`, `on`), as the server reads
/// them. Its other forms (a prefix such as `tr`, spaces around) are left to
/// it.
pub(super) fn boolean(text: &[u8]) -> Option<bool> {
    let mut word = [0u8; 5];
    let word = word.get_mut(..text.len())?;
    for (lower, byte) in word.iter_mut().zip(text) {
        *lower = byte.to_ascii_lowercase();
    }
    match &*word {
        b"t" | b"true" | b"y" | b"yes" | b"on" | b"1" => Some(true),
        b"f" | b"false" | b"n" | b"no" | b"off" | b"0" => Some(false),
        _ => None,
    }
}

/// 32 hex digits as the server's input reads them: a hyphen or none after
/// any group of four (`xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, or none at
/// all, as some systems export them), in braces or not. Anything else
/// where a digit goes (a sign, another hyphen) the server refuses.
fn uuid(text: &[u8]) -> Option<[u8; 16]> {
    let digits = match text {
        [b'{', digits @ .., b'}'] => digits,
        _ => text,
    };
    let mut bytes = [0u8; 16];
    let mut at = 0;
    for (i, byte) in bytes.iter_mut().enumerate() {
        *byte = hex_pair(digits.get(at..at + 2)?)?;
        at += 2;
        if i % 2 == 1 && i < 15 && digits.get(at) == Some(&b'-') {
            at += 1;
        }
    }
    (at == digits.len()).then_some(bytes)
}

/// The byte two hex digits spell. Not `u8::from_str_radix`, which takes
/// `+f` as 15 where the server's input functions refuse the `+`.
fn hex_pair(pair: &[u8]) -> Option<u8> {
    let digit = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    Some(digit(pair[0])? << 4 | digit(pair[1])?)
}

/// bytea as `byteain` reads it: after `\x`, pairs of hex digits; else
/// the escape form, where `\\` is a backslash, `\` and three octal digits
/// (the first 0-3) a byte, and any other byte itself. The whitespace the
/// server skips between hex pairs, and `\X`, are unsure.
fn bytea(text: &[u8], out: &mut Vec<u8>) -> Option<()> {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    let read = match text {
        [b'\\', b'x', hex @ ..] => hex_bytes(hex, out),
        _ => escaped_bytes(text, out),
    };
    if read.is_none() {
        out.truncate(start);
        return None;
    }
    let len = (out.len() - start - 4) as i32;
    out[start..start + 4].copy_from_slice(&len.to_be_bytes());
    Some(())
}

fn hex_bytes(hex: &[u8], out: &mut Vec<u8>) -> Option<()> {
    if hex.len() % 2 != 0 {
        return None;
    }
    for pair in hex.chunks_exact(2) {
        out.push(hex_pair(pair)?);
    }
    Some(())
}

fn escaped_bytes(text: &[u8], out: &mut Vec<u8>) -> Option<()> {
    let mut rest = text;
    while let Some((&b, after)) = rest.split_first() {
        rest = match (b, after) {
            (b'\\', [b'\\', more @ ..]) => {
                out.push(b'\\');
                more
            }
            (b'\\', [d1 @ b'0'..=b'3', d2 @ b'0'..=b'7', d3 @ b'0'..=b'7', more @ ..]) => {
                out.push((d1 - b'0') << 6 | (d2 - b'0') << 3 | (d3 - b'0'));
                more
            }
            (b'\\', _) => return None,
            (b, _) => {
                out.push(b);
                after
            }
        };
    }
    Some(())
}

/// The most dimensions an array has (the server's `MAXDIM`).
const MAX_DIMENSIONS: usize = 6;

/// An array literal whose elements are unquoted, or quoted with
/// backslash escapes (`{1,2,NULL}`, `{"a b","say \"hi\""}`), one array or
/// sub-arrays of equal lengths to six dimensions (`{{1,2},{3,4}}`), in the
/// array's binary form: dimensions, null flag, element type, each
/// dimension's size and lower bound 1, then each element as a field in
/// order. Anything else the server's `array_in` reads is left to it:
/// spaces outside quotes (which it trims), backslashes outside quotes,
/// explicit bounds (`[0:1]={...}`), empty sub-arrays, an empty element;
/// so are sub-arrays of unequal lengths, which it refuses with its own
/// reason. Why escapes and dimensions: JSON arrays loaded into array
/// columns (`format::documents`) are written so, and every such chunk
/// went as text.
fn array(element: &Element, text: &[u8], out: &mut Vec<u8>) -> Option<()> {
    let start = out.len();
    // The field's length and the header for one dimension, written once
    // the elements are.
    out.extend_from_slice(&[0; 24]);
    let mut shape = Shape::default();
    if !sub_array(element, text, 0, &mut shape, out)?.is_empty() {
        return None;
    }
    let dimensions = shape.dimensions;
    match dimensions {
        // No dimensions: no size and lower bound either.
        0 => out.truncate(start + 16),
        1 => {}
        _ => drop(out.splice(start + 24..start + 24, std::iter::repeat(0).take(8 * (dimensions - 1)))),
    }
    let header = [dimensions as i32, i32::from(shape.nulls), element.oid as i32];
    let bounds = shape.sizes[..dimensions].iter().flat_map(|&size| [size, 1]);
    for (at, word) in header.into_iter().chain(bounds).enumerate() {
        out[start + 4 + 4 * at..][..4].copy_from_slice(&word.to_be_bytes());
    }
    let len = (out.len() - start - 4) as i32;
    out[start..start + 4].copy_from_slice(&len.to_be_bytes());
    Some(())
}

/// What an array literal's braces said so far.
#[derive(Default)]
struct Shape {
    /// Known once the first element is reached (the depth of its braces).
    dimensions: usize,
    /// Each dimension's size, 0 until a sub-array at that depth has ended.
    sizes: [i32; MAX_DIMENSIONS],
    nulls: bool,
}

/// Reads the braces at the front of `text` at `depth` (0 for the whole
/// array), appending their elements; returns what follows the closing
/// brace, or `None` for what [`array()`] leaves to the server.
fn sub_array<'t>(
    element: &Element,
    text: &'t [u8],
    depth: usize,
    shape: &mut Shape,
    out: &mut Vec<u8>,
) -> Option<&'t [u8]> {
    let mut rest = text.strip_prefix(b"{")?;
    if let Some(after) = rest.strip_prefix(b"}") {
        // Only the whole array may be empty.
        return (depth == 0).then_some(after);
    }
    let mut count = 0;
    loop {
        if rest.first() == Some(&b'{') {
            if depth + 1 == MAX_DIMENSIONS || (shape.dimensions != 0 && depth + 1 >= shape.dimensions) {
                return None;
            }
            rest = sub_array(element, rest, depth + 1, shape, out)?;
        } else {
            if shape.dimensions == 0 {
                shape.dimensions = depth + 1;
            } else if shape.dimensions != depth + 1 {
                return None;
            }
            rest = array_element(element, rest, &mut shape.nulls, out)?;
        }
        count += 1;
        match rest {
            [b',', next @ ..] => rest = next,
            [b'}', next @ ..] => {
                rest = next;
                break;
            }
            _ => return None,
        }
    }
    match &mut shape.sizes[depth] {
        size @ 0 => *size = count,
        size => (*size == count).then_some(())?,
    }
    Some(rest)
}

/// Appends the element at the front of `text` (quoted, or unquoted up to a
/// comma or closing brace); returns what follows it.
fn array_element<'t>(element: &Element, text: &'t [u8], nulls: &mut bool, out: &mut Vec<u8>) -> Option<&'t [u8]> {
    if let Some(quoted) = text.strip_prefix(b"\"") {
        let close = closing_quote(quoted)?;
        let inner = &quoted[..close];
        if memchr(b'\\', inner).is_none() {
            encode_value(element.codec, inner, out).ok()?;
        } else {
            encode_value(element.codec, &unescape_quoted(inner), out).ok()?;
        }
        return Some(&quoted[close + 1..]);
    }
    let end = memchr2(b',', b'}', text).unwrap_or(text.len());
    let item = &text[..end];
    let plain = |b: &u8| !b"{}\"\\ \t\n\r\x0b\x0c".contains(b);
    if item.is_empty() || !item.iter().all(plain) {
        return None;
    }
    if item.eq_ignore_ascii_case(b"NULL") {
        out.extend_from_slice(&(-1i32).to_be_bytes());
        *nulls = true;
    } else {
        encode_value(element.codec, item, out).ok()?;
    }
    Some(&text[end..])
}

/// Where the quote that ends a quoted array element is in `quoted` (the
/// text after the opening quote): the first not escaped by a backslash.
fn closing_quote(quoted: &[u8]) -> Option<usize> {
    let mut from = 0;
    loop {
        let at = from + memchr2(b'"', b'\\', &quoted[from..])?;
        if quoted[at] == b'"' {
            return Some(at);
        }
        from = at + 2;
        if from > quoted.len() {
            return None;
        }
    }
}

/// A quoted array element's text with each backslash taken as making the
/// next byte itself, as `array_in` reads it.
fn unescape_quoted(inner: &[u8]) -> Vec<u8> {
    let mut text = Vec::with_capacity(inner.len());
    let mut escaped = false;
    for &b in inner {
        if b == b'\\' && !escaped {
            escaped = true;
            continue;
        }
        escaped = false;
        text.push(b);
    }
    text
}

/// A range as `range_send` writes it: a flags byte, then each finite
/// bound's length and value in the subtype's binary form. Read here:
/// `empty`, or `[` or `(`, a bound, a comma, a bound, `]` or `)`, with
/// nothing around; a bound empty (unbounded), plain, or in double quotes
/// with no quote or backslash inside (as the server prints timestamps).
/// Anything else (spaces around, `EMPTY`, escapes) is left to the text
/// path. A discrete range's canonical form (`[1,5]` is `[1,6)`) and a lower
/// bound above the upper are the server's business either way: `range_recv`
/// builds the range with the function `range_in` uses.
fn range_value(range: &Element, text: &[u8], out: &mut Vec<u8>) -> Option<()> {
    const EMPTY: u8 = 0x01;
    const LOWER_INCLUSIVE: u8 = 0x02;
    const UPPER_INCLUSIVE: u8 = 0x04;
    const LOWER_UNBOUNDED: u8 = 0x08;
    const UPPER_UNBOUNDED: u8 = 0x10;
    let start = out.len();
    // The field's length and the flags, written once the bounds are.
    out.extend_from_slice(&[0; 5]);
    let flags = if text == b"empty" {
        EMPTY
    } else {
        let (&open, rest) = text.split_first()?;
        let (&close, inner) = rest.split_last()?;
        let (lower, after) = range_bound(inner)?;
        let (upper, after) = range_bound(after.strip_prefix(b",")?)?;
        if !after.is_empty() {
            return None;
        }
        let mut flags = match (open, close) {
            (b'[' | b'(', b']' | b')') => 0,
            _ => return None,
        };
        for (bound, inclusive, unbounded, is_inclusive) in [
            (lower, LOWER_INCLUSIVE, LOWER_UNBOUNDED, open == b'['),
            (upper, UPPER_INCLUSIVE, UPPER_UNBOUNDED, close == b']'),
        ] {
            match bound {
                None => flags |= unbounded,
                Some(value) => {
                    encode_value(range.codec, value, out).ok()?;
                    flags |= if is_inclusive { inclusive } else { 0 };
                }
            }
        }
        flags
    };
    out[start + 4] = flags;
    let len = (out.len() - start - 4) as i32;
    out[start..start + 4].copy_from_slice(&len.to_be_bytes());
    Some(())
}

/// The range bound at the front of `text` (`None`: unbounded, nothing
/// written) and what follows it, which must be a comma or the end.
fn range_bound(text: &[u8]) -> Option<(Option<&[u8]>, &[u8])> {
    let (value, after) = match text.strip_prefix(b"\"") {
        Some(quoted) => {
            let close = memchr(b'"', quoted)?;
            let value = &quoted[..close];
            // `""` is an empty string, not an unbounded end.
            if value.is_empty() || value.contains(&b'\\') {
                return None;
            }
            (Some(value), &quoted[close + 1..])
        }
        None => {
            let end = memchr(b',', text).unwrap_or(text.len());
            let value = &text[..end];
            if value.iter().any(|b| b"\"\\()[]".contains(b)) {
                return None;
            }
            ((!value.is_empty()).then_some(value), &text[end..])
        }
    };
    matches!(after.first(), None | Some(b',')).then_some((value, after))
}

/// inet or cidr as `inet_send` writes them: family (2 for IPv4, 3 for
/// IPv6), bits, whether it is a cidr, address length, address. Read with
/// std's parsers: four decimal octets without leading zeros, IPv6 in its
/// standard forms, and `/bits` without leading zeros (the server refuses
/// those for IPv6). The short IPv4 forms the server also takes (`10.1/16`,
/// `010.0.0.1`) are unsure.
fn network(text: &[u8], cidr: bool, out: &mut Vec<u8>) -> Option<()> {
    let text = std::str::from_utf8(text).ok()?;
    let (address, bits) = match text.split_once('/') {
        Some((address, bits)) => (address, Some(bits)),
        None => (text, None),
    };
    let v6;
    let v4;
    let (family, most, octets): (u8, u8, &[u8]) = match address.contains(':') {
        false => {
            v4 = address.parse::<std::net::Ipv4Addr>().ok()?.octets();
            (2, 32, &v4)
        }
        true => {
            v6 = address.parse::<std::net::Ipv6Addr>().ok()?.octets();
            (3, 128, &v6)
        }
    };
    let bits = match bits {
        // A cidr without bits has a netmask the server infers from the
        // IPv4 address class: its reading, not ours.
        None if cidr => return None,
        None => most,
        Some("0") => 0,
        Some(digits) if digits.len() <= 3 && !digits.starts_with('0') && digits.bytes().all(|b| b.is_ascii_digit()) => {
            digits.parse().ok().filter(|&b| b <= most)?
        }
        Some(_) => return None,
    };
    // A cidr with address bits past its netmask is refused; the text path
    // gives the server's reason.
    let past_netmask = |i: usize| octets[i / 8] & (0x80 >> (i % 8)) != 0;
    if cidr && (usize::from(bits)..octets.len() * 8).any(past_netmask) {
        return None;
    }
    out.extend_from_slice(&(4 + octets.len() as i32).to_be_bytes());
    out.extend_from_slice(&[family, bits, u8::from(cidr), octets.len() as u8]);
    out.extend_from_slice(octets);
    Some(())
}

/// macaddr or macaddr8 (`eight`) as `macaddr_send` and `macaddr8_send`
/// write them: the address's 6 or 8 bytes. Read as the server prints them
/// and most tools write them: two hex digits a byte, separated all by `:`
/// or all by `-`. The server's other spellings (`0800.2b01.0203`,
/// `08002b:010203`, one-digit bytes, spaces) are unsure. macaddr8 also
/// takes a 6-byte address, widened as the server widens it, with `ff:fe` in
/// the middle.
fn mac_address(text: &[u8], eight: bool, out: &mut Vec<u8>) -> Option<()> {
    let count = (text.len() + 1) / 3;
    if (text.len() + 1) % 3 != 0 || !(count == 6 || eight && count == 8) {
        return None;
    }
    let separator = text[2];
    if separator != b':' && separator != b'-' {
        return None;
    }
    let mut bytes = [0u8; 8];
    for (byte, group) in bytes.iter_mut().zip(text.chunks(3)) {
        if group.len() == 3 && group[2] != separator {
            return None;
        }
        *byte = hex_pair(group)?;
    }
    let bytes = match (eight, count) {
        (true, 6) => [bytes[0], bytes[1], bytes[2], 0xff, 0xfe, bytes[3], bytes[4], bytes[5]],
        _ => bytes,
    };
    put(out, &bytes[..if eight { 8 } else { 6 }]);
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoder(types: &[&str], kind: FormatKind) -> BinaryEncoder {
        let cols: Vec<(String, String)> = types.iter().map(|t| ("c".to_string(), t.to_string())).collect();
        BinaryEncoder::new(&cols, &FormatOptions::new(kind)).unwrap()
    }

    /// The fields of the first tuple in `out`: None for NULL.
    fn fields(out: &[u8]) -> Vec<Option<Vec<u8>>> {
        let n = i16::from_be_bytes([out[0], out[1]]) as usize;
        let mut at = 2;
        (0..n)
            .map(|_| {
                let len = i32::from_be_bytes(out[at..at + 4].try_into().unwrap());
                at += 4;
                (len >= 0).then(|| {
                    at += len as usize;
                    out[at - len as usize..at].to_vec()
                })
            })
            .collect()
    }

    #[test]
    fn splits_text_fields_with_escapes_and_nulls() {
        let mut e = encoder(&["integer", "text", "text"], FormatKind::Tsv);
        let mut out = Vec::new();
        let done = e.encode(b"-7\ta\\tb\\\\c\\101\\x41\t\\N\n", true, &mut out).unwrap();
        assert_eq!(done, Encoded { consumed: 22, records: 1 });
        let f = fields(&out);
        assert_eq!(f[0].as_deref(), Some(&(-7i32).to_be_bytes()[..]));
        assert_eq!(f[1].as_deref(), Some(&b"a\tb\\cAA"[..]));
        assert_eq!(f[2], None);
    }

    #[test]
    fn stops_before_an_incomplete_record_unless_at_end() {
        let mut e = encoder(&["integer"], FormatKind::Tsv);
        let mut out = Vec::new();
        assert_eq!(e.encode(b"1\n2\n3", false, &mut out).unwrap(), Encoded { consumed: 4, records: 2 });
        assert_eq!(e.encode(b"3", true, &mut out).unwrap(), Encoded { consumed: 1, records: 1 });
    }

    #[test]
    fn splits_csv_like_the_server() {
        let mut e = encoder(&["text", "text", "text", "text"], FormatKind::Csv);
        let mut out = Vec::new();
        e.encode(b"\"a,\"\"b\"\"\nc\",,\"\",x\"y\"z\n", true, &mut out).unwrap();
        let f = fields(&out);
        assert_eq!(f[0].as_deref(), Some(&b"a,\"b\"\nc"[..]));
        assert_eq!(f[1], None, "unquoted empty is NULL");
        assert_eq!(f[2].as_deref(), Some(&b""[..]), "quoted empty is an empty string");
        assert_eq!(f[3].as_deref(), Some(&b"xyz"[..]), "a quote may open mid-field");
    }

    #[test]
    fn unsure_of_what_the_text_path_must_decide() {
        let mut e = encoder(&["integer", "text"], FormatKind::Tsv);
        let cases: [&[u8]; 7] =
            [b"0x1\ta\n", b"1\n", b"1\ta\tb\n", b"1\ta\r\n", b"1\ta\\0\n", b"1e3\ta\n", b"1\t\\.\n"];
        for case in cases {
            let err = e.encode(case, true, &mut Vec::new()).unwrap_err();
            assert_eq!(err.record, 0, "{case:?}");
        }
        let mut e = encoder(&["integer"], FormatKind::Csv);
        assert!(e.encode(b"1\n\"2\n", true, &mut Vec::new()).is_err_and(|u| u.record == 1));
        assert!(e.encode(b"1\r\n", true, &mut Vec::new()).is_err_and(|u| u.reason.contains("after LF")));
    }

    /// A chunk's lines end as its first one does (LF or CRLF), as the server
    /// reads a COPY; a carriage return anywhere else goes to the text path.
    #[test]
    fn crlf_lines_encode_like_lf_lines() {
        for kind in [FormatKind::Csv, FormatKind::Tsv] {
            let mut e = encoder(&["integer", "text"], kind);
            let sep = if kind == FormatKind::Csv { "," } else { "\t" };
            let lines = |end: &str| format!("1{sep}a{end}22{sep}bb{end}3{sep}c").into_bytes();
            let (mut lf, mut crlf) = (Vec::new(), Vec::new());
            e.begin_chunk();
            let by_lf = e.encode(&lines("\n"), true, &mut lf).unwrap();
            e.begin_chunk();
            let by_crlf = e.encode(&lines("\r\n"), true, &mut crlf).unwrap();
            assert_eq!((by_lf.records, by_crlf.records, by_crlf.consumed), (3, 3, by_lf.consumed + 2), "{kind:?}");
            assert_eq!(lf, crlf, "{kind:?}");
            for (input, record, why) in [
                (&b"1,a\r\n2,b\n"[..], 1, "after CRLF"),
                (b"1,a\r2,b\r\n", 0, "carriage return"),
                (b"1,a\n2,b\r\n", 1, "after LF"),
            ] {
                let input = if kind == FormatKind::Csv {
                    input.to_vec()
                } else {
                    input.iter().map(|&b| if b == b',' { b'\t' } else { b }).collect()
                };
                e.begin_chunk();
                let unsure = e.encode(&input, true, &mut Vec::new()).unwrap_err();
                assert_eq!(unsure.record, record, "{kind:?} {input:?}");
                assert!(unsure.reason.contains(why), "{kind:?} {input:?}: {}", unsure.reason);
            }
        }
        let mut e = encoder(&["text"], FormatKind::Csv);
        let mut out = Vec::new();
        e.begin_chunk();
        assert_eq!(e.encode(b"\"a\r\nb\"\r\n", true, &mut out).unwrap().records, 1, "a quoted CRLF is data");
        assert_eq!(fields(&out)[0].as_deref(), Some(&b"a\r\nb"[..]));
        e.begin_chunk();
        assert_eq!(
            e.encode(b"x\r", false, &mut out).unwrap().records,
            0,
            "a carriage return at the end waits for more"
        );
        let mut e = encoder(&["jsonb"], FormatKind::Jsonl);
        let mut out = Vec::new();
        e.begin_chunk();
        assert_eq!(e.encode(b"[1]\r\n{}\r\n", true, &mut out).unwrap().records, 2);
        assert_eq!(fields(&out)[0].as_deref(), Some(&b"\x01[1]"[..]), "json lines too");
        e.begin_chunk();
        assert!(e.encode(b"{}\r\n[1]\n", true, &mut out).is_err_and(|u| u.record == 1));
        e.begin_chunk();
        assert!(e.encode(b"{}\n[1]\r\n", true, &mut out).is_err_and(|u| u.record == 1));
        e.begin_chunk();
        assert!(e.encode(b"{}\r\r\n", true, &mut out).is_err_and(|u| u.record == 0), "a carriage return inside");
    }

    /// Record ends the splitter finds (complete records only), and whether
    /// it stopped on a record it is unsure of.
    fn split_ends(format: &FormatOptions, input: &[u8]) -> (Vec<usize>, bool) {
        let rules = Rules::new(format);
        let mut split = Split {
            codecs: vec![Codec::Text; 64],
            date_order: None,
            column: 0,
            scratch: Vec::new(),
            eol: Eol::Unknown,
        };
        let (mut ends, mut at) = (Vec::new(), 0);
        loop {
            split.column = 0;
            let rest = &input[at..];
            let stepped = match rules.kind {
                Layout::Text => split.text(&rules, rest, false, &mut Vec::new()),
                Layout::Csv => split.csv(&rules, rest, false, &mut Vec::new()),
                Layout::Line => split.line(rest, false, &mut Vec::new()),
            };
            match stepped {
                Ok(len) => {
                    at += len;
                    ends.push(at);
                }
                Err(Stop::NeedMore) => return (ends, false),
                Err(Stop::Unsure(_)) => return (ends, true),
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(600))]
        /// The splitter ends records where the record scanner's reference
        /// (PostgreSQL's CopyReadLineText) does; where it is unsure it stops,
        /// and the chunk goes as text.
        #[test]
        fn splitter_ends_records_where_the_reference_does(
            picks in proptest::collection::vec(0usize..9, 0..300),
            kind in 0usize..4,
        ) {
            let input: Vec<u8> = picks.iter().map(|&i| b"a,\"\\\n\t|x\r"[i]).collect();
            let mut format = FormatOptions::new([FormatKind::Tsv, FormatKind::Csv, FormatKind::Csv, FormatKind::Jsonl][kind]);
            if kind == 2 {
                format.escape = Some(b'\\');
            }
            let reference = crate::format::scan::reference_record_ends(format.dialect(), crate::format::scan::LineEnd::Lf, &input);
            let (ends, unsure) = split_ends(&format, &input);
            proptest::prop_assert_eq!(&reference[..ends.len()], &ends[..]);
            if !unsure {
                proptest::prop_assert_eq!(reference, ends);
            }
        }
    }

    /// A field's text as files hold them: numbers of every size, decimals,
    /// dates, the NULL strings, and bytes that make a line unclean.
    fn field_text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            any::<i64>().prop_map(|v| v.to_string()),
            any::<i16>().prop_map(|v| format!("+{v}")),
            ("-?", "[0-9]{0,20}", proptest::option::of("[0-9]{0,20}")).prop_map(|(sign, int, frac)| format!(
                "{sign}{int}{}",
                frac.map(|f| format!(".{f}")).unwrap_or_default()
            )),
            (0u32..10_001, 0u32..14, 0u32..33).prop_map(|(y, m, d)| format!("{y:04}-{m:02}-{d:02}")),
            "[a-z0-9\\\\.+ |,\"\t\r\n-]{0,8}",
            Just("\\N".to_string()),
            Just("NULL".to_string()),
            Just(String::new()),
        ]
    }

    /// A well-formed value for the `names[t]` type of the test below.
    fn typed_text(t: usize) -> proptest::strategy::BoxedStrategy<String> {
        use proptest::prelude::*;
        match t {
            0 => any::<i16>().prop_map(|v| v.to_string()).boxed(),
            1 => any::<i32>().prop_map(|v| v.to_string()).boxed(),
            2 => {
                prop_oneof![any::<i64>().prop_map(|v| v.to_string()), (-99_999i64..99_999).prop_map(|v| v.to_string())]
                    .boxed()
            }
            3 => prop_oneof![("-?", "[0-9]{0,18}", "[0-9]{0,18}"), ("-?", "0{0,5}[0-9]{0,3}", "0{0,9}[0-9]{0,9}")]
                .prop_map(|(s, i, f)| format!("{s}{i}.{f}"))
                .boxed(),
            4 => prop_oneof![
                (1u32..10_000, 1u32..13, 1u32..29).prop_map(|(y, m, d)| format!("{y:04}-{m:02}-{d:02}")),
                "[0-3]?[0-9][/.-][0-3]?[0-9][/.-]([0-9]{2}|[0-9]{4})",
            ]
            .boxed(),
            5 => "[a-z ]{0,10}".boxed(),
            6 => "t|f|true|false".boxed(),
            7 => "[0-9]{1,5}\\.[0-9]{1,5}".boxed(),
            8 => prop_oneof![
                "[0-9]{4}-[01][0-9]-[0-3][0-9][ T][0-2][0-9]:[0-5][0-9]:[0-6][0-9](\\.[0-9]{0,7})?(Z|[+-][01][0-9](:?[0-9]{2})?)?",
                // Read again (see `reread`): day and month first, short
                // times, 12-hour clocks.
                "[0-3]?[0-9][/.-][0-3]?[0-9][/.-]([0-9]{2}|[0-9]{4})( [0-2]?[0-9]:[0-6][0-9](:[0-6][0-9])?( ?[AaPp][Mm])?)?([+-][01][0-9])?",
            ]
            .boxed(),
            9 => "[0-2][0-9]:[0-5][0-9]:[0-6][0-9](\\.[0-9]{1,7})?".boxed(),
            12 => "(-?[0-9]{1,3} years? )?([+-]?[0-9]{1,2} mons? )?([+-]?[0-9]{1,3} days? )?[+-]?[0-9]{1,3}:[0-5][0-9]:[0-6][0-9](\\.[0-9]{1,7})?"
                .boxed(),
            13 => "[0-2][0-9]:[0-5][0-9]:[0-6][0-9](\\.[0-9]{1,7})?([+-][01][0-9](:?[0-9]{2})?)?".boxed(),
            // Short elements: their binary form is several times their text.
            11 => proptest::collection::vec("[0-9]|NULL", 0..40).prop_map(|v| format!("{{{}}}", v.join(","))).boxed(),
            _ => "[01]{0,20}".boxed(),
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(600))]
        /// The clean-line path gives exactly the tuples, record counts and
        /// unsure records of the exact splitter alone.
        #[test]
        fn clean_lines_encode_like_the_exact_splitter(
            (types, rows) in proptest::strategy::Strategy::prop_flat_map(proptest::collection::vec(0usize..14, 1..6), |types| {
                let quoted = |text: String| format!("\"{text}\"");
                // As CSV writers quote: each quote inside doubled.
                let doubled = |text: String| format!("\"{}\"", text.replace('"', "\"\""));
                let row: Vec<_> = types
                    .iter()
                    .map(|&t| {
                        proptest::prop_oneof![
                            6 => typed_text(t),
                            1 => field_text(),
                            2 => proptest::strategy::Strategy::prop_map(typed_text(t), quoted),
                            1 => proptest::strategy::Strategy::prop_map(field_text(), quoted),
                            1 => proptest::strategy::Strategy::prop_map(field_text(), doubled),
                        ]
                    })
                    .collect();
                // Some rows lose their last field: a field count the fast path must refuse.
                (proptest::strategy::Just(types), proptest::collection::vec((row, 0u8..8), 0..12))
            }),
            dialect in 0usize..12,
            forcing in 0usize..4,
            ragged_end in proptest::bool::ANY,
            crlf in proptest::bool::ANY,
        ) {
            let names = [
                "smallint",
                "integer",
                "bigint",
                "numeric",
                "date",
                "text",
                "boolean",
                "double precision",
                "timestamp with time zone",
                "time without time zone",
                "bit varying",
                "bigint[]",
                "interval",
                "time with time zone",
            ];
            let types: Vec<&str> = types.iter().map(|&t| names[t]).collect();
            let dialects = [(FormatKind::Tsv, "\t"), (FormatKind::Tsv, "|"), (FormatKind::Csv, ","), (FormatKind::Csv, "-")];
            let (kind, delimiter) = dialects[dialect % 4];
            let mut format = FormatOptions::new(kind);
            format.delimiter = Some(delimiter.as_bytes()[0]);
            if (4..8).contains(&dialect) {
                format.null = Some("NULL".into());
            }
            if dialect >= 8 {
                // An escape that is not the quote: quoted fields take the exact splitter.
                format.escape = Some(b'\\');
            }
            if kind == FormatKind::Csv {
                // Every column is named `c`: a forced one is forced everywhere.
                format.force_null = vec!["c".to_string(); forcing & 1];
                format.force_not_null = vec!["c".to_string(); forcing >> 1];
            }
            let rows = rows.into_iter().map(|(mut row, cut)| {
                if cut == 0 {
                    row.pop();
                }
                row
            });
            let end = if crlf { "\r\n" } else { "\n" };
            let mut input: Vec<u8> = rows.flat_map(|r| format!("{}{end}", r.join(delimiter)).into_bytes()).collect();
            if ragged_end {
                input.truncate(input.len().saturating_sub(end.len()));
            }
            let cols: Vec<(String, String)> = types.iter().map(|t| ("c".to_string(), t.to_string())).collect();
            let mut fast = BinaryEncoder::new(&cols, &format).unwrap();
            if dialect % 2 == 0 {
                fast = fast.bare_timestamps_are_utc();
            }
            if dialect % 3 > 0 {
                fast = fast.dates_in_order([DateOrder::MonthFirst, DateOrder::DayFirst][dialect % 3 - 1]);
            }
            let mut exact = fast.clone();
            exact.rules.clean_lines = false;
            // The clean path's loop as compiled for CPUs without AVX2.
            let mut portable = fast.clone();
            portable.work = clean::Workspace::portable();
            for at_end in [false, true] {
                let (mut fast_out, mut exact_out, mut portable_out) = (Vec::new(), Vec::new(), Vec::new());
                fast.begin_chunk();
                exact.begin_chunk();
                portable.begin_chunk();
                let fast_done = fast.encode(&input, at_end, &mut fast_out);
                let exact_done = exact.encode(&input, at_end, &mut exact_out);
                let portable_done = portable.encode(&input, at_end, &mut portable_out);
                proptest::prop_assert_eq!(&fast_done, &exact_done);
                proptest::prop_assert_eq!(&fast_out, &exact_out);
                proptest::prop_assert_eq!(portable_done, exact_done);
                proptest::prop_assert_eq!(portable_out, exact_out);
            }
        }
    }

    #[test]
    fn numbers_in_binary() {
        assert_eq!(integer(b"+12", 0, 100), Some(12));
        assert_eq!(integer(b"128", -128, 127), None);
        assert_eq!(integer(b"9223372036854775807", i64::MIN, i64::MAX), Some(i64::MAX));
        assert_eq!(integer(b"-9223372036854775808", i64::MIN, i64::MAX), Some(i64::MIN));
        let num = |t: &[u8]| {
            let mut out = Vec::new();
            numeric(t, &mut out)
                .map(|_| out[4..].chunks(2).map(|c| i16::from_be_bytes([c[0], c[1]])).collect::<Vec<_>>())
        };
        // ndigits, weight, sign, dscale, digits...
        assert_eq!(num(b"21168.23"), Some(vec![3, 1, 0, 2, 2, 1168, 2300]));
        assert_eq!(num(b"-0.04"), Some(vec![1, -1, 0x4000, 2, 400]));
        assert_eq!(num(b"0.00"), Some(vec![0, 0, 0, 2]));
        assert_eq!(num(b"-0"), Some(vec![0, 0, 0, 0]));
        assert_eq!(num(b".00001"), Some(vec![1, -2, 0, 5, 1000]));
        assert_eq!(num(b"100000000"), Some(vec![1, 2, 0, 0, 1]));
        assert_eq!(num(b"1e5"), None);
        assert_eq!(num(b"NaN"), None);
        assert_eq!(num(b"."), None);
        assert_eq!(float(b"1.5e3"), Some(1500.0));
        assert_eq!(float(b"1e999"), None);
        assert_eq!(float(b"1e-320"), None, "subnormal");
        assert_eq!(float(b"0.0"), Some(0.0));
        assert_eq!(float(b".5"), Some(0.5));
        assert_eq!(float(b"-5."), Some(-5.0));
        assert_eq!(float(b"."), None);
        assert_eq!(float(b"-.e5"), None);
        assert_eq!(float(b"+6629339.25"), Some(6629339.25), "a plus, as strtod reads it");
        assert_eq!(float(b"+-5"), None);
        for (word, want) in [("Infinity", f64::INFINITY), ("-inf", f64::NEG_INFINITY), ("+INF", f64::INFINITY)] {
            assert_eq!(float(word.as_bytes()), Some(want), "{word}");
        }
        assert!(float(b"NaN").is_some_and(f64::is_nan) && float(b"nan").is_some_and(f64::is_nan));
        for left_to_the_server in ["-nan", "+NaN", "nan(1)", "infinit", "infinityy", " inf", "in"] {
            assert_eq!(float(left_to_the_server.as_bytes()), None, "{left_to_the_server}");
        }
        assert!(f32_exact(b"0.0") && f32_exact(b"1.5") && f32_exact(b"3.4028235e38"));
        for too_small in ["1e-46", "7.006492321624085e-46", "1e-40"] {
            assert!(!f32_exact(too_small.as_bytes()), "{too_small}: refused or subnormal in real");
        }
    }

    #[test]
    fn dates_and_timestamps_read_again_as_exports_write_them() {
        const HOUR: i64 = 3_600_000_000;
        const MINUTE: i64 = 60_000_000;
        let us = Some(DateOrder::MonthFirst);
        let micros = |codec, text: &str, order| match reread(codec, text.as_bytes(), order)? {
            Reread::Micros(micros) => Some(micros),
            Reread::Days(_) => None,
        };
        let days = |text: &str, order| match reread(Codec::Date, text.as_bytes(), order)? {
            Reread::Days(days) => Some(days),
            Reread::Micros(_) => None,
        };
        assert_eq!(days("12/31/1999", us), Some(-1));
        assert_eq!(days("31.12.99", Some(DateOrder::DayFirst)), Some(-1));
        assert_eq!(days("12/31/1999", None), None, "year first: the server's");
        for (text, want) in [("2000-1-1", 0), ("2000/1/02", 1), ("1999.12.31", -1), ("2000-01-1", 0)] {
            assert_eq!(days(text, None), Some(want), "{text}: a year first, whatever the order");
        }
        for refused in
            ["2000-1/1", "2000-13-1", "2001-2-29", "0000-1-1", "2000-1-", "2000--1", "2000-001-1", "02000-1-1"]
        {
            assert_eq!(days(refused, us), None, "{refused}");
        }
        let new_year = 0;
        for (text, want) in [
            ("01/01/2000 13:45", 13 * HOUR + 45 * MINUTE),
            ("1/1/2000 1:45:30 PM", 13 * HOUR + 45 * MINUTE + 30_000_000),
            ("1/1/00 1:45pm", 13 * HOUR + 45 * MINUTE),
            ("1/1/2000 12:05 AM", 5 * MINUTE),
            ("1/1/2000 12:05 PM", 12 * HOUR + 5 * MINUTE),
            ("1/1/2000 0:05 PM", 12 * HOUR + 5 * MINUTE),
            ("2000-01-01 9:05", 9 * HOUR + 5 * MINUTE),
            ("2000-01-01T09:05", 9 * HOUR + 5 * MINUTE),
            ("2000-1-1 9:05", 9 * HOUR + 5 * MINUTE),
            ("1/1/2000", new_year),
        ] {
            assert_eq!(micros(Codec::Timestamp, text, us), Some(new_year + want), "{text}");
        }
        for refused in [
            "1/1/2000 13:05 PM",
            "1/1/2000 24:00",
            "1/1/2000 9:5",
            "1/1/2000 13:45.5",
            "1/1/2000 1:45 PMT",
            "1/1/2000T09:05",
            "1/1/2000  9:05",
            "1/1/2000 9:05 BC",
            "1/1/2000 9:05+02",
        ] {
            assert_eq!(micros(Codec::Timestamp, refused, us), None, "{refused}");
        }
        assert_eq!(micros(Codec::TimestampTz, "1/1/2000 14:00+02", us), Some(12 * HOUR));
        assert_eq!(micros(Codec::TimestampTz, "1/1/2000 2:00 PM-02", us), None, "a POSIX zone named PM");
        assert_eq!(micros(Codec::TimestampTz, "1/1/2000 2:00 PM", us), None, "read in the session's zone");
        assert_eq!(micros(Codec::TimestampTzUtc, "1/1/2000 2:00 PM", us), Some(14 * HOUR));
        assert_eq!(micros(Codec::Int4, "1/1/2000", us), None);
        for (text, want) in [("1999-12-31 23:59:59", -1), ("12/31/1999 11:30 PM", -1), ("2000-01-01T10:00", 0)] {
            assert_eq!(days(text, us), Some(want), "{text}: a date column keeps a timestamp's date");
        }
        for refused in ["2000-01-01 10:00+02", "2000-01-01 24:00", "2000-01-01 10:00 UTC"] {
            assert_eq!(days(refused, us), None, "{refused}");
        }
        for (text, want) in
            [("9:05", 9 * HOUR + 5 * MINUTE), ("09:05", 9 * HOUR + 5 * MINUTE), ("12:05 am", 5 * MINUTE)]
        {
            assert_eq!(micros(Codec::Time, text, None), Some(want), "{text}");
        }
        assert_eq!(micros(Codec::Time, "1:45:30.5PM", None), Some(13 * HOUR + 45 * MINUTE + 30_500_000));
        for refused in ["9:5", "13:05 PM", "9:05+02", "24:00", "9:05 BC", " 9:05"] {
            assert_eq!(micros(Codec::Time, refused, None), None, "{refused}");
        }
        let columns = [("at".to_string(), "timestamp with time zone".to_string())];
        let mut encoder = BinaryEncoder::new(&columns, &FormatOptions::new(FormatKind::Tsv))
            .unwrap()
            .dates_in_order(DateOrder::MonthFirst);
        let unsure = encoder.encode(b"1/1/2000 2:00 PM\n", true, &mut Vec::new()).unwrap_err();
        assert!(unsure.reason.contains("without an offset"), "{}", unsure.reason);
    }

    #[test]
    fn booleans_as_exports_write_them() {
        for word in ["t", "TRUE", "True", "y", "Yes", "ON", "1"] {
            assert_eq!(boolean(word.as_bytes()), Some(true), "{word}");
        }
        for word in ["f", "FALSE", "False", "N", "no", "Off", "0"] {
            assert_eq!(boolean(word.as_bytes()), Some(false), "{word}");
        }
        for left_to_the_server in ["tr", " t", "t ", "o", "of", "yess", "2", "", "truee", "\u{e9}"] {
            assert_eq!(boolean(left_to_the_server.as_bytes()), None, "{left_to_the_server}");
        }
    }

    /// The digits decide alone wherever the server's doubles agree with
    /// them: random fractions, and ones crafted next to a half.
    #[test]
    fn fractions_past_microseconds_round_as_the_servers_doubles() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let near_half = ["5", "49999999", "50000000", "500000001", "4999999989", "49999999999999", "5000000000001"];
        for _ in 0..200_000 {
            let length = 7 + (next() % 18) as usize;
            let mut digits: Vec<u8> = (0..length).map(|_| b'0' + (next() % 10) as u8).collect();
            if next() % 2 == 0 {
                let tail = near_half[(next() % near_half.len() as u64) as usize].as_bytes();
                let end = (6 + tail.len()).min(length);
                digits[6..end].copy_from_slice(&tail[..end - 6]);
            }
            let server = doubles_rounded_micros(&digits).filter(|&m| m < 1_000_000);
            assert_eq!(rounded_micros(&digits), server, "{}", String::from_utf8_lossy(&digits));
        }
    }

    #[test]
    fn spaces_around_numbers_dates_and_booleans_as_their_inputs_skip_them() {
        let read = |codec: Codec, text: &str| {
            let mut out = Vec::new();
            encode_or_reread(codec, text.as_bytes(), Some(DateOrder::MonthFirst), &mut out)
                .ok()
                .map(|()| out[4..].to_vec())
        };
        assert_eq!(read(Codec::Int4, "  42"), Some(42i32.to_be_bytes().to_vec()));
        assert_eq!(read(Codec::Int8, "\t-7\r\n"), Some((-7i64).to_be_bytes().to_vec()));
        assert_eq!(read(Codec::Float8, " NaN "), read(Codec::Float8, "NaN"));
        assert_eq!(read(Codec::Numeric, " 10.50"), read(Codec::Numeric, "10.50"));
        assert_eq!(read(Codec::Bool, "TRUE\x0b"), Some(vec![1]));
        assert_eq!(read(Codec::Date, " 12/31/2024 "), read(Codec::Date, "2024-12-31"), "read again, unpadded");
        assert_eq!(read(Codec::Timestamp, "2024-12-31 10:00:00\x0c"), read(Codec::Timestamp, "2024-12-31 10:00:00"));
        for left_to_the_server in [" ", "4 2", "42\u{a0}", "- 42", ""] {
            assert_eq!(read(Codec::Int4, left_to_the_server), None, "{left_to_the_server:?}");
        }
        assert_eq!(read(Codec::Uuid, " a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), None, "uuid_in reads no spaces");
        assert_eq!(read(Codec::Inet, "10.0.0.1 "), None);
        assert_eq!(read(Codec::Text, " x ").as_deref(), Some(&b" x "[..]));
    }

    #[test]
    fn dates_with_the_months_name_or_in_eight_digits() {
        let date = |text: &str, order| reread(Codec::Date, text.as_bytes(), order).map(|r| r.write(|b| b.to_vec()));
        let iso = |text: &str| iso_date(text.as_bytes()).map(|days| (days as i32).to_be_bytes().to_vec());
        for order in [Some(DateOrder::MonthFirst), Some(DateOrder::DayFirst)] {
            assert_eq!(date("13-MAR-24", order), iso("2024-03-13"));
            assert_eq!(date("5/march/1999", order), iso("1999-03-05"));
            assert_eq!(date("01.Sept.70", order), iso("1970-09-01"));
            assert_eq!(date("31-oct-69 00:00:00", order), iso("2069-10-31"), "a T in OCT is no ISO T");
            for left_to_the_server in ["30-FEB-24", "13-MAR-124", "13-MAR-0000", "13-MAY/24", "13-MA-24", "MAR-13-24"] {
                assert_eq!(date(left_to_the_server, order), None, "{left_to_the_server}");
            }
        }
        assert_eq!(date("13-MAR-24", None), None, "under YMD the server reads 13 as the year");
        for order in [Some(DateOrder::MonthFirst), None] {
            assert_eq!(date("20240313", order), iso("2024-03-13"), "eight digits in any DateStyle");
            for left_to_the_server in ["20241301", "2024031", "202403130", "00000101", "240313"] {
                assert_eq!(date(left_to_the_server, order), None, "{left_to_the_server}");
            }
        }
        let read = reread(Codec::Timestamp, b"13-OCT-24 1:45 PM", Some(DateOrder::DayFirst));
        assert_eq!(
            read.map(|r| r.write(|b| b.to_vec())),
            timestamp(b"2024-10-13 13:45:00").map(|t| t.to_be_bytes().to_vec())
        );
    }

    #[test]
    fn numerics_with_an_exponent_as_the_server_moves_the_point() {
        let read = |text: &str| {
            let mut out = Vec::new();
            encode_value(Codec::Numeric, text.as_bytes(), &mut out).ok().map(|()| out)
        };
        let plain = |text: &str| {
            let mut out = Vec::new();
            numeric(text.as_bytes(), &mut out).map(|()| out)
        };
        let same = [
            ("1.5e3", "1500"),
            ("1.50e1", "15.0"),
            ("-3.2E-05", "-0.000032"),
            ("1e+2", "100"),
            (".5e1", "5"),
            ("5.e0", "5"),
            ("000123e-2", "1.23"),
            ("-0e5", "0"),
            ("12.5e-1", "1.25"),
            ("123.4e-1", "12.34"),
            ("123.45e-3", "0.12345"),
            ("12.5e0", "12.5"),
            ("-1.2345e2", "-123.45"),
            ("9.99e+999", &format!("999{}", "0".repeat(997))),
        ];
        for (exponent, decimal) in same {
            assert!(read(exponent).is_some(), "{exponent}");
            assert_eq!(read(exponent), plain(decimal), "{exponent} as {decimal}");
        }
        for left_to_the_server in ["1e", "e5", "1e12345", "1e-1001", "1e+-2", "1.5e3.2", "1e 5", "NaNe1", "1,5e3"] {
            assert_eq!(read(left_to_the_server), None, "{left_to_the_server}");
        }
    }

    #[test]
    fn times_of_day_timestamps_with_offsets_and_bits() {
        const HOUR: i64 = 3_600_000_000;
        assert_eq!(time_of_day(b"00:00:00"), Some(0));
        assert_eq!(time_of_day(b"23:59:59.5"), Some(24 * HOUR - 500_000));
        assert_eq!(time_of_day(b"12:00:00.1234567"), Some(12 * HOUR + 123_457), "rounded as the server rounds");
        assert_eq!(time_of_day(b"12:00:00.123456789"), Some(12 * HOUR + 123_457), "pandas' nanoseconds");
        assert_eq!(time_of_day(b"12:00:00.1234564999"), Some(12 * HOUR + 123_456));
        assert_eq!(time_of_day(b"12:00:00.0000000000000000000000001"), None, "longer than read here");
        assert_eq!(time_of_day(b"12:00:00.9999999"), None, "carried into the next second by the server");
        assert_eq!(timestamp(b"2000-01-01 00:00:01.0000004+00"), None, "an offset in a timestamp");
        assert_eq!(timestamptz(b"2000-01-01T00:00:01.0000004Z", false), Some(1_000_000));
        assert_eq!(timestamptz(b"2000-01-01 14:00:00.0000000 +02:00", false), Some(12 * HOUR), "SQL Server's");
        assert_eq!(timestamptz(b"2000-01-01 14:00:00  +02:00", false), None, "two spaces: left to the server");
        assert_eq!(time_with_offset(b"14:00:00 +02"), time_with_offset(b"14:00:00+02"));
        assert_eq!(time_of_day(b"24:00:00"), None);
        assert_eq!(time_of_day(b"12:00"), None);
        let noon = 12 * HOUR;
        assert_eq!(timestamptz(b"2000-01-01 12:00:00", true), Some(noon));
        assert_eq!(timestamptz(b"2000-01-01 12:00:00", false), None, "read in the session's zone");
        for east in ["2000-01-01T14:00:00+02", "2000-01-01 14:00:00+02:00", "2000-01-01 14:00:00+0200"] {
            assert_eq!(timestamptz(east.as_bytes(), false), Some(noon), "{east}");
        }
        assert_eq!(timestamptz(b"2000-01-01 06:30:00.25-05:30", false), Some(noon + 250_000));
        assert_eq!(timestamptz(b"2000-01-01 12:00:00Z", false), Some(noon));
        assert_eq!(timestamptz(b"2000-01-01 12:00:00+16", true), None, "beyond the server's 15 hours");
        assert_eq!(timestamptz(b"2000-01-01 12:00:00 PST", true), None);
        for utc in ["2000-01-01 12:00:00 UTC", "2000-01-01 12:00:00utc", "2000-01-01 12:00:00 GMT"] {
            assert_eq!(timestamptz(utc.as_bytes(), false), Some(noon), "{utc}");
        }
        for left_to_the_server in ["2000-01-01 12:00:00  UTC", "2000-01-01 12:00:00 UTC+1", "2000-01-01 12:00:00 UT"] {
            assert_eq!(timestamptz(left_to_the_server.as_bytes(), false), None, "{left_to_the_server}");
        }
        assert_eq!(timestamp(b"2000-01-01 12:00:00+02"), None, "an offset is not part of a timestamp");
        assert_eq!(timestamp(b"2000-01-02"), Some(24 * HOUR), "a date alone is its midnight");
        assert_eq!(timestamptz(b"2000-01-02", true), Some(24 * HOUR));
        assert_eq!(timestamptz(b"2000-01-02", false), None, "midnight in the session's zone");
        assert_eq!(timestamp(b"2000-02-30"), None);
        let encoded = |t: &[u8]| {
            let mut out = Vec::new();
            bits(t, &mut out).map(|_| out)
        };
        assert_eq!(encoded(b"101"), Some(vec![0, 0, 0, 5, 0, 0, 0, 3, 0b1010_0000]));
        assert_eq!(encoded(b"111111111"), Some(vec![0, 0, 0, 6, 0, 0, 0, 9, 0xff, 0b1000_0000]));
        assert_eq!(encoded(b""), Some(vec![0, 0, 0, 4, 0, 0, 0, 0]));
        assert_eq!(encoded(b"x5"), None);
    }

    #[test]
    fn intervals_as_the_server_prints_them_and_times_with_offsets() {
        const SECOND: i64 = 1_000_000;
        const HOUR: i64 = 3600 * SECOND;
        let read = |text: &str| interval(text.as_bytes()).map(|v| (v.months, v.days, v.micros));
        assert_eq!(read("1 year 2 mons 3 days 04:05:06.5"), Some((14, 3, 4 * HOUR + 306 * SECOND + SECOND / 2)));
        assert_eq!(read("-1 days +02:00:00"), Some((0, -1, 2 * HOUR)));
        assert_eq!(read("-00:00:01"), Some((0, 0, -SECOND)));
        assert_eq!(read("+1 year -1 mons"), Some((11, 0, 0)));
        assert_eq!(read("123456:00:00.000001"), Some((0, 0, 123_456 * HOUR + 1)));
        assert_eq!(read("3 months"), Some((3, 0, 0)));
        assert_eq!(read("-00:00:00.1234567"), Some((0, 0, -123_457)), "rounded as the server rounds");
        assert_eq!(read("-1 years -2 mons 3 days"), Some((-14, 3, 0)), "another sign: each part keeps its own");
        assert_eq!(read("-1 years 2 mons"), None, "under sql_standard the months are negative too");
        let doubtful = [
            "",
            "0",
            "1",
            "1 hour",
            "1.5 days",
            "P1D",
            "@ 1 day",
            "1 day ago",
            "2 days 1 year",
            "1 day 1 day",
            "1 Day",
            " 1 day",
            "1 day ",
            "1  day",
            "- 1 day",
            "04:05",
            "4:5:06",
            "04:05:60",
            "04:60:00",
            "1234567 days",
            "1234567:00:00",
            "00:00:00.9999999",
            "00:00:00.",
            "1 day 04:05:06 1 year",
            "04:05:06 04:05:06",
            "day",
        ];
        for text in doubtful {
            assert_eq!(read(text), None, "{text:?}");
        }
        let encoded = interval(b"1 mon 2 days 00:00:03").unwrap().binary();
        assert_eq!(encoded, [0, 0, 0, 0, 0, 0x2d, 0xc6, 0xc0, 0, 0, 0, 2, 0, 0, 0, 1]);
        let timetz = |text: &str| time_with_offset(text.as_bytes());
        let at = |micros: i64, west: i32| [micros.to_be_bytes().as_slice(), &west.to_be_bytes()].concat();
        assert_eq!(timetz("04:05:06+02").map(|v| v.to_vec()), Some(at(4 * HOUR + 306 * SECOND, -7200)));
        assert_eq!(timetz("23:59:59.25-05:30").map(|v| v.to_vec()), Some(at(24 * HOUR - 3 * SECOND / 4, 19_800)));
        assert_eq!(timetz("00:00:00+0000").map(|v| v.to_vec()), Some(at(0, 0)));
        for doubtful in ["04:05:06", "04:05:06 PST", "04:05:06+16", "24:00:00+00", "04:05+02", "04:05:06+2"] {
            assert_eq!(timetz(doubtful), None, "{doubtful:?}");
        }
    }

    #[test]
    fn dates_count_days_like_hinnants_algorithm() {
        for year in 1..=9999 {
            for month in 1..=12 {
                for day in [1, 15, 28, 29, 30, 31] {
                    let text = format!("{year:04}-{month:02}-{day:02}");
                    let real = date_exists(year, month, day);
                    let expected = real.then(|| days_since_2000(year, month, day));
                    assert_eq!(iso_date(text.as_bytes()), expected, "{text}");
                }
            }
        }
    }

    /// Any byte at any position of a date: the eight bytes checked together
    /// accept exactly what a byte-by-byte reading accepts.
    #[test]
    fn dates_refuse_every_other_byte_anywhere() {
        let slow = |text: &[u8]| -> Option<i64> {
            let shape = text.len() == 10
                && text.iter().enumerate().all(|(i, b)| if i == 4 || i == 7 { *b == b'-' } else { b.is_ascii_digit() });
            let number =
                |range: std::ops::Range<usize>| std::str::from_utf8(&text[range]).unwrap().parse::<i64>().unwrap();
            let (year, month, day) = shape.then(|| (number(0..4), number(5..7), number(8..10)))?;
            ((1..=12).contains(&month) && year > 0 && day > 0 && date_exists(year, month, day))
                .then(|| days_since_2000(year, month, day))
        };
        for base in [b"1996-03-13", b"2000-12-31", b"0001-01-01", b"9999-09-09"] {
            for at in 0..=10 {
                for byte in 0..=255u8 {
                    let mut text = base.to_vec();
                    match text.get_mut(at) {
                        Some(b) => *b = byte,
                        None => text.push(byte),
                    }
                    assert_eq!(iso_date(&text), slow(&text), "{:?}", String::from_utf8_lossy(&text));
                }
            }
            assert_eq!(iso_date(&base[..9]), None);
        }
    }

    /// Whether a civil date exists, the slow obvious way.
    fn date_exists(year: i64, month: i64, day: i64) -> bool {
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
        let days = [31, 28 + i64::from(leap), 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
        day <= days[month as usize - 1]
    }

    #[test]
    fn dates_and_times_from_postgresqls_epoch() {
        assert_eq!(iso_date(b"2000-01-01"), Some(0));
        assert_eq!(iso_date(b"1996-03-13"), Some(-1389));
        assert_eq!(iso_date(b"2024-02-29"), Some(8825));
        assert_eq!(iso_date(b"2023-02-29"), None);
        assert_eq!(iso_date(b"0000-01-01"), None);
        assert_eq!(iso_date(b"1996-3-13"), None);
        assert_eq!(timestamp(b"2000-01-02 00:00:01.5"), Some(86_400_000_000 + 1_500_000));
        assert_eq!(timestamp(b"1999-12-31T23:59:59"), Some(-1_000_000));
        assert_eq!(timestamp(b"2000-01-01 24:00:00"), None);
        assert_eq!(timestamp(b"2000-01-01 00:00:00.1234567"), Some(123_457));
        assert_eq!(timestamp(b"2000-01-01 23:59:59.99999951"), None, "the next day to the server");
    }

    #[test]
    fn ranges_as_range_send_writes_them() {
        let encode = |ty: &str, text: &str| {
            let mut out = Vec::new();
            encode_value(Codec::for_type(ty).unwrap(), text.as_bytes(), &mut out).ok().map(|_| out)
        };
        let days = |d: i32| d.to_be_bytes();
        let jan1 = days_since_2000(2024, 1, 1) as i32;
        let mut want = vec![0, 0, 0, 17, 0x02, 0, 0, 0, 4];
        want.extend(days(jan1));
        want.extend([0, 0, 0, 4]);
        want.extend(days(jan1 + 31));
        assert_eq!(encode("daterange", "[2024-01-01,2024-02-01)"), Some(want));
        assert_eq!(encode("daterange", "empty"), Some(vec![0, 0, 0, 1, 0x01]));
        assert_eq!(encode("int4range", "(,)"), Some(vec![0, 0, 0, 1, 0x18]));
        assert_eq!(encode("int4range", "(,5]"), Some(vec![0, 0, 0, 9, 0x0c, 0, 0, 0, 4, 0, 0, 0, 5]));
        assert_eq!(encode("int8range", "[\"7\",)").map(|v| v[4]), Some(0x12), "a quoted bound");
        let tstz = encode("tstzrange", "[\"2024-01-01 10:00:00+00\",\"2024-01-02 00:00:00+00\")").unwrap();
        assert_eq!((tstz.len(), tstz[4]), (4 + 1 + 12 + 12, 0x02));
        assert_eq!(Codec::for_type("tstzrange").map(|c| c.sql_name()), Some("tstzrange"));
        assert_eq!(Codec::for_type("datemultirange"), None);
        for unsure in [
            " [1,5)",
            "[1,5) ",
            "EMPTY",
            "[1,5",
            "{1,5}",
            "[1,5,6)",
            "[\"\",5)",
            "[\"1\\2\",5)",
            "[\"1\"\"2\",5)",
            "[ 1,5)",
            "[x,5)",
            "[1,(5)",
            "[,]x",
        ] {
            assert_eq!(encode("int4range", unsure), None, "{unsure:?}");
        }
        assert_eq!(encode("tstzrange", "[2024-01-01 10:00:00,)"), None, "no offset: the session's zone");
    }

    #[test]
    fn types_with_and_without_codecs() {
        assert_eq!(Codec::for_type("numeric(15,2)"), Some(Codec::Numeric));
        assert_eq!(Codec::for_type("character varying(44)"), Some(Codec::Text));
        assert_eq!(Codec::for_type("timestamp(3) without time zone"), Some(Codec::Timestamp));
        assert_eq!(Codec::for_type("timestamp(0) with time zone"), Some(Codec::TimestampTz));
        assert_eq!(Codec::for_type("time(3) without time zone"), Some(Codec::Time));
        assert_eq!(Codec::for_type("bit(3)"), Some(Codec::Bits));
        assert_eq!(Codec::for_type("time(2) with time zone"), Some(Codec::TimeTz));
        assert_eq!(Codec::for_type("interval(3)"), Some(Codec::Interval));
        assert_eq!(Codec::for_type("interval day to second"), None, "a range the server may read text by");
        assert_eq!(Codec::for_type("interval[]").map(|c| c.sql_name()), Some("array"));
        assert_eq!(Codec::for_type("integer[]"), Some(Codec::Array(&ELEMENTS[1])));
        assert_eq!(Codec::for_type("character(3)[]").map(|c| c.sql_name()), Some("array"));
        assert_eq!(Codec::for_type("numeric(5,2)[]"), Some(Codec::Array(&ELEMENTS[5])));
        assert_eq!(Codec::for_type("jsonb[]").map(|c| c.sql_name()), Some("array"));
        assert_eq!(Codec::for_type("bit(2)[]"), None);
        assert_eq!(Codec::for_type("mydomain[]"), None);
        assert_eq!(Codec::for_type("[]"), None);
        assert_eq!(Codec::for_type("bytea"), Some(Codec::Bytea));
        assert_eq!(Codec::for_type("inet"), Some(Codec::Inet));
        assert_eq!(Codec::for_type("cidr"), Some(Codec::Cidr));
        assert_eq!(Codec::for_type("macaddr"), Some(Codec::MacAddr));
        assert_eq!(Codec::for_type("macaddr8[]").map(|c| c.sql_name()), Some("array"));
        assert_eq!(Codec::for_type("money"), None);
        assert_eq!(Codec::for_type("anyenum"), Some(Codec::Text), "an enum's label, as text");
        assert_eq!(Codec::for_type("anyenum[]"), None, "an array of enums names the enum's own OID");
        let cols = vec![("ts".to_string(), "money".to_string())];
        let err = BinaryEncoder::new(&cols, &FormatOptions::new(FormatKind::Csv)).unwrap_err();
        assert!(err.contains("\"ts\""), "{err}");
        assert_eq!(uuid(b"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11").unwrap()[0], 0xa0);
        let canonical = uuid(b"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
        for other in [
            "a0eebc999c0b4ef8bb6d6bb9bd380a11",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
            "a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11",
        ] {
            assert_eq!(uuid(other.as_bytes()), canonical, "{other}");
        }
        for refused in [
            "{a0eebc999c0b4ef8bb6d6bb9bd380a11",
            "a0eebc999c0b4ef8bb6d6bb9bd380a11-",
            "a0e-ebc999c0b4ef8bb6d6bb9bd380a11",
            "a0eebc999c0b4ef8bb6d6bb9bd380a1",
        ] {
            assert_eq!(uuid(refused.as_bytes()), None, "{refused}");
        }
    }

    #[test]
    fn bytea_reads_both_forms_and_leaves_the_doubtful_to_the_server() {
        let value = |text: &[u8]| {
            let mut out = vec![9];
            bytea(text, &mut out).map(|()| out[5..].to_vec()).ok_or(out)
        };
        assert_eq!(value(br"\x48656C6c6f"), Ok(b"Hello".to_vec()));
        assert_eq!(value(br"\x"), Ok(Vec::new()));
        assert_eq!(value(br"a\\b\001\377z"), Ok(b"a\\b\x01\xffz".to_vec()));
        assert_eq!(value("é".as_bytes()), Ok("é".as_bytes().to_vec()));
        for unsure in [&br"\x4"[..], br"\x48 65", br"\xzz", br"\X48", br"a\b", br"\400", br"\01"] {
            assert_eq!(value(unsure), Err(vec![9]), "{}", String::from_utf8_lossy(unsure));
        }
        let mut out = Vec::new();
        bytea(br"\x0102", &mut out).unwrap();
        assert_eq!(out, [0, 0, 0, 2, 1, 2], "the length, then the bytes");
    }

    #[test]
    fn inet_and_cidr_as_the_server_sends_them() {
        let read = |text: &str, cidr: bool| {
            let mut out = Vec::new();
            network(text.as_bytes(), cidr, &mut out).map(|()| out)
        };
        let value = |text: &str| read(text, false);
        assert_eq!(value("192.168.0.1"), Some(vec![0, 0, 0, 8, 2, 32, 0, 4, 192, 168, 0, 1]));
        assert_eq!(value("10.1.2.3/8"), Some(vec![0, 0, 0, 8, 2, 8, 0, 4, 10, 1, 2, 3]), "host bits stay");
        assert_eq!(value("0.0.0.0/0").unwrap()[5], 0);
        let v6 = value("::ffff:1.2.3.4/120").unwrap();
        assert_eq!(v6[..8], [0, 0, 0, 20, 3, 120, 0, 16]);
        assert_eq!(v6[18..], [0xff, 0xff, 1, 2, 3, 4]);
        for unsure in
            ["10.1/16", "010.0.0.1", "1.2.3.4/33", "1.2.3.4/024", "::1/129", "1.2.3.4/", " 1.2.3.4", "fe80::1%eth0"]
        {
            assert_eq!(value(unsure), None, "{unsure}");
        }
        let cidr = |text: &str| read(text, true);
        assert_eq!(cidr("10.1.0.0/16"), Some(vec![0, 0, 0, 8, 2, 16, 1, 4, 10, 1, 0, 0]));
        assert_eq!(cidr("2001:db8::/32").unwrap()[..8], [0, 0, 0, 20, 3, 32, 1, 16]);
        assert_eq!(cidr("0.0.0.0/0").unwrap()[5..7], [0, 1]);
        assert_eq!(cidr("10.1.2.3/8"), None, "bits past the netmask: the server refuses");
        assert_eq!(cidr("10.0.0.128/24"), None);
        assert_eq!(cidr("10.0.0.0"), None, "the server infers the netmask from the class");
        assert_eq!(cidr("1.2.3.4/32").unwrap()[5], 32);
    }

    #[test]
    fn mac_addresses_and_uuids_in_hex_digits_only() {
        let read = |text: &str, eight: bool| {
            let mut out = Vec::new();
            mac_address(text.as_bytes(), eight, &mut out).map(|()| out)
        };
        assert_eq!(read("08:00:2B:01:02:0f", false), Some(vec![0, 0, 0, 6, 8, 0, 0x2b, 1, 2, 15]));
        assert_eq!(read("08-00-2b-01-02-03", false).unwrap()[4..], [8, 0, 0x2b, 1, 2, 3]);
        assert_eq!(read("08:00:2b:01:02:03:04:05", true).unwrap()[..6], [0, 0, 0, 8, 8, 0]);
        assert_eq!(read("08:00:2b:01:02:03", true).unwrap()[4..], [8, 0, 0x2b, 0xff, 0xfe, 1, 2, 3], "EUI-48 widened");
        for unsure in [
            "08:00:2b:01:02:03:04:05",
            "08:00:2b-01:02:03",
            "0800.2b01.0203",
            "08002b:010203",
            "8:0:2b:1:2:3",
            "08:00:2b:01:02:+3",
            "08:00:2b:01:02:03 ",
            "08:00:2b:01:02:0g",
            "",
        ] {
            assert_eq!(read(unsure, false), None, "{unsure}");
        }
        assert_eq!(read("08:00:2b:01:02:03:04", true), None);
        assert!(uuid(b"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11").is_some());
        assert_eq!(uuid(b"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a+1"), None, "a sign is not a digit");
        assert_eq!(uuid(b"a0eebc99-9c0b-4ef8-bb6d-6bb9bd38-a11"), None, "nor is a hyphen");
    }

    #[test]
    fn arrays_as_the_server_reads_their_literals() {
        let value = |sql_type: &str, text: &str| {
            let mut out = vec![9];
            encode_value(Codec::for_type(sql_type).unwrap(), text.as_bytes(), &mut out).ok().map(|()| out[1..].to_vec())
        };
        let int = |v: i32| v.to_be_bytes().to_vec();
        let header = |dims: i32, nulls: i32, oid: i32| [int(dims), int(nulls), int(oid)].concat();
        let expect = |parts: &[Vec<u8>]| {
            let body = parts.concat();
            [int(body.len() as i32), body].concat()
        };
        assert_eq!(
            value("integer[]", "{1,-2,NULL}"),
            Some(expect(&[header(1, 1, 23), int(3), int(1), int(4), int(1), int(4), int(-2), int(-1)]))
        );
        assert_eq!(value("bigint[]", "{}"), Some(expect(&[header(0, 0, 20)])));
        let text = |s: &str| [int(s.len() as i32), s.as_bytes().to_vec()].concat();
        assert_eq!(
            value("text[]", r#"{"a b",null,"NULL",""}"#),
            Some(expect(&[header(1, 1, 25), int(4), int(1), text("a b"), int(-1), text("NULL"), text("")]))
        );
        assert_eq!(value("character varying(3)[]", "{é}").unwrap()[12..16], int(1043)[..]);
        assert_eq!(value("character(2)[]", "{x}").unwrap()[12..16], int(1042)[..]);
        assert_eq!(
            value("text[]", r#"{"say \"hi\"","a\\b\c",""}"#),
            Some(expect(&[header(1, 0, 25), int(3), int(1), text(r#"say "hi""#), text(r"a\bc"), text("")])),
            "a backslash makes the next byte itself"
        );
        let int4 = |v: i32| [int(4), int(v)].concat();
        assert_eq!(
            value("integer[]", "{{1,2,3},{4,NULL,6}}"),
            Some(expect(&[
                header(2, 1, 23),
                [int(2), int(1), int(3), int(1)].concat(),
                [int4(1), int4(2), int4(3), int4(4), int(-1), int4(6)].concat(),
            ])),
            "dimensions: sizes and lower bounds, then the elements in order"
        );
        let jsonb = |s: &str| [int(s.len() as i32 + 1), vec![1], s.as_bytes().to_vec()].concat();
        assert_eq!(
            value("jsonb[]", r#"{"{\"k\":[1]}",NULL,"\"s\""}"#),
            Some(expect(&[header(1, 1, 3802), int(3), int(1), jsonb(r#"{"k":[1]}"#), int(-1), jsonb(r#""s""#)]))
        );
        assert_eq!(value("integer[]", "{{{{{{1}}}}}}").unwrap()[4..8], int(6)[..], "six dimensions");
        // What array_in reads otherwise (trimming, escapes outside quotes,
        // bounds, empty sub-arrays) or refuses, and elements the element's
        // codec is unsure of.
        for unsure in [
            "{1, 2}",
            " {1}",
            "{1} ",
            r"{a\,b}",
            r#"{"a\"b"}"#,
            r#"{"1\"}"#,
            "{{1,2},{3}}",
            "{{1,2},3}",
            "{1,{2}}",
            "{{1},{{2}}}",
            "{{}}",
            "{{1},{}}",
            "{{{{{{{1}}}}}}}",
            "{{1}}}",
            "{{1}",
            "[0:1]={1,2}",
            "{1,}",
            "{,1}",
            "{1,,2}",
            "{}}",
            r#"{"1"2}"#,
            r#"{"1}"#,
            "1,2",
            "{1.5}",
            "{ 1}",
        ] {
            assert_eq!(value("integer[]", unsure), None, "{unsure}");
        }
        assert_eq!(value("numeric[]", "{1e5}"), value("numeric[]", "{100000}"), "the server's numeric input");
        assert_eq!(value("timestamp with time zone[]", r#"{"2020-01-01 10:00:00"}"#), None, "a bare timestamptz");
        assert!(value("timestamp with time zone[]", r#"{"2020-01-01 10:00:00+02"}"#).is_some());
    }
}

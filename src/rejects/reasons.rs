//! Why records were rejected, counted by kind, for the summary.
//!
//! Why: a load that rejected 40,000 records said only "see the rejects
//! file", and the user ran `jq` over it to learn that they were two
//! mistakes (a date column written day first, a price over its
//! precision). psql stops at the first error and says it; sluice goes on,
//! so it must say what the errors were. Records are grouped by what their
//! reason says without the value it quotes (`invalid input syntax for type
//! date: "31/01/2024"` and `... "30/01/2024"` are one kind), their column
//! and SQLSTATE; each kind keeps its first reject's reason (its first
//! [`REASON_KEPT`] bytes) and place. Memory stays bounded: past
//! [`KINDS_KEPT`] kinds, records are only counted.

use serde::Serialize;

use super::Reject;

/// The most kinds kept apart; records of further kinds count as "other".
pub const KINDS_KEPT: usize = 64;

/// The most of a reason a kind keeps: the server quotes a refused value
/// whole, and a field may be megabytes long.
const REASON_KEPT: usize = 500;

/// One kind of reject: how many records, and the first of them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RejectKind {
    pub records: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sqlstate: Option<String>,
    /// The first record's reason (up to [`REASON_KEPT`] bytes, then `…`).
    pub reason: String,
    /// Where the first record of the kind is.
    pub file: String,
    pub line: u64,
    /// The reason without the values it quotes: what the kind is.
    #[serde(skip)]
    stem: String,
}

/// What a load's rejects were, for its report.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RejectReasons {
    /// Most records first.
    pub kinds: Vec<RejectKind>,
    /// Records of kinds past the [`KINDS_KEPT`] first met.
    pub other_records: u64,
}

/// Rejects counted by kind, in the order kinds were first met.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReasonTally {
    kinds: Vec<RejectKind>,
    /// Records of kinds past [`KINDS_KEPT`].
    other: u64,
}

impl ReasonTally {
    pub fn add(&mut self, reject: &Reject) {
        let stem = stem(shortened(&reject.reason));
        let same = |kind: &&mut RejectKind| {
            kind.stem == stem && kind.column == reject.column && kind.sqlstate == reject.sqlstate
        };
        if let Some(kind) = self.kinds.iter_mut().find(same) {
            kind.records += 1;
            // Workers commit out of input order: keep the earliest record.
            if (reject.file.as_str(), reject.line) < (kind.file.as_str(), kind.line) {
                (kind.file, kind.line) = (reject.file.clone(), reject.line);
                kind.reason = kept(&reject.reason);
            }
        } else if self.kinds.len() < KINDS_KEPT {
            self.kinds.push(RejectKind {
                records: 1,
                column: reject.column.clone(),
                sqlstate: reject.sqlstate.clone(),
                reason: kept(&reject.reason),
                file: reject.file.clone(),
                line: reject.line,
                stem,
            });
        } else {
            self.other += 1;
        }
    }

    /// The kinds, most records first (ties: the earlier in the input).
    pub fn summed_up(&self) -> RejectReasons {
        let mut kinds = self.kinds.clone();
        kinds.sort_by(|a, b| b.records.cmp(&a.records).then_with(|| (&a.file, a.line).cmp(&(&b.file, b.line))));
        RejectReasons { kinds, other_records: self.other }
    }
}

/// The reason a kind shows: [`shortened`], with `…` where it was cut.
fn kept(reason: &str) -> String {
    match shortened(reason) {
        short if short.len() < reason.len() => format!("{short}…"),
        short => short.to_string(),
    }
}

/// `reason`'s first [`REASON_KEPT`] bytes (to a character's end).
fn shortened(reason: &str) -> &str {
    let mut end = reason.len().min(REASON_KEPT);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    &reason[..end]
}

/// A reason without what differs from record to record: a value quoted
/// after a colon (`: "12a"`, `: '1.5'`) becomes `: …`, and a detail in
/// parentheses at the end (`(Key (id)=(7) already exists.)`) is left off.
/// Names quoted elsewhere (a constraint's, a column's) stay: they tell
/// kinds apart.
fn stem(reason: &str) -> String {
    let reason = match reason.find(" (") {
        Some(at) if reason[at..].contains(')') => &reason[..at],
        _ => reason,
    };
    let mut out = String::with_capacity(reason.len());
    let mut rest = reason;
    while let Some(at) = rest.find(": ") {
        out.push_str(&rest[..at + 2]);
        rest = &rest[at + 2..];
        let Some(quote) = rest.chars().next().filter(|c| matches!(c, '"' | '\'')) else {
            continue;
        };
        match rest[1..].find(quote) {
            Some(end) => {
                out.push('…');
                rest = &rest[end + 2..];
            }
            None => {
                out.push('…');
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Position;

    fn reject(line: u64, reason: &str, column: Option<&str>, sqlstate: Option<&str>) -> Reject {
        let position = Position { file: "a.csv".into(), line, byte: line * 10, record: line };
        let mut reject = Reject::new(position, reason.to_string(), b"x\n");
        reject.column = column.map(str::to_string);
        reject.sqlstate = sqlstate.map(str::to_string);
        reject
    }

    #[test]
    fn stems_leave_out_quoted_values_and_a_closing_detail_but_keep_names() {
        assert_eq!(stem("invalid input syntax for type date: \"31/01/2024\""), "invalid input syntax for type date: …");
        assert_eq!(
            stem("column 'amount': '1.5' is no number as --decimal-comma reads them"),
            "column 'amount': … is no number as --decimal-comma reads them"
        );
        assert_eq!(
            stem("duplicate key value violates unique constraint \"t_pkey\" (Key (id)=(1) already exists.)"),
            "duplicate key value violates unique constraint \"t_pkey\""
        );
        assert_eq!(stem("missing data for column \"n\""), "missing data for column \"n\"");
        assert_eq!(
            stem("value too long for type character varying(3)"),
            "value too long for type character varying(3)"
        );
        assert_eq!(stem("odd: \"unclosed"), "odd: …");
    }

    #[test]
    fn records_of_one_kind_count_together_and_keep_the_earliest() {
        let mut tally = ReasonTally::default();
        tally.add(&reject(9, "invalid input syntax for type date: \"x\"", Some("d"), Some("22007")));
        tally.add(&reject(4, "invalid input syntax for type date: \"y\"", Some("d"), Some("22007")));
        tally.add(&reject(5, "invalid input syntax for type date: \"y\"", Some("e"), Some("22007")));
        tally.add(&reject(6, "invalid input syntax for type date: \"z\"", Some("d"), Some("22007")));
        let RejectReasons { kinds, other_records } = tally.summed_up();
        assert_eq!(other_records, 0);
        assert_eq!(kinds.len(), 2);
        assert_eq!(
            (kinds[0].records, kinds[0].line, kinds[0].reason.as_str()),
            (3, 4, "invalid input syntax for type date: \"y\"")
        );
        assert_eq!((kinds[1].records, kinds[1].column.as_deref()), (1, Some("e")));
    }

    #[test]
    fn a_long_reason_is_kept_in_part_and_counts_with_its_kind() {
        let mut tally = ReasonTally::default();
        let long = |c: &str| format!("invalid input syntax for type integer: \"{}\"", c.repeat(1 << 20));
        tally.add(&reject(1, &long("é"), Some("n"), Some("22P02")));
        tally.add(&reject(2, &long("x"), Some("n"), Some("22P02")));
        let RejectReasons { kinds, .. } = tally.summed_up();
        assert_eq!((kinds.len(), kinds[0].records), (1, 2), "one kind: the quoted values differ");
        assert!(kinds[0].reason.len() <= REASON_KEPT + 3 && kinds[0].reason.ends_with("é…"), "{}", kinds[0].reason);
    }

    #[test]
    fn kinds_past_the_limit_are_only_counted() {
        let mut tally = ReasonTally::default();
        for n in 0..KINDS_KEPT as u64 + 3 {
            tally.add(&reject(n + 1, &format!("reason {n}"), None, None));
        }
        let RejectReasons { kinds, other_records } = tally.summed_up();
        assert_eq!((kinds.len(), other_records), (KINDS_KEPT, 3));
    }
}

//! Quoting of SQL identifiers and literals.
//!
//! Every identifier sluice sends is quoted, so a table named `Order Items` or
//! `select` loads like any other and nothing in a user's input is ever read as
//! SQL. Written here rather than taken from libpq because statements are built
//! before a connection exists and the rules are short and fixed.

/// `"name"` with embedded double quotes doubled.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// An `E'...'` literal: quotes and backslashes escaped, so the result means
/// the same whatever `standard_conforming_strings` is.
pub fn quote_literal(value: &str) -> String {
    format!("E'{}'", value.replace('\\', "\\\\").replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_identifiers_and_literals() {
        assert_eq!(quote_ident("Order \"Items\""), "\"Order \"\"Items\"\"\"");
        assert_eq!(quote_literal("\\N"), "E'\\\\N'");
        assert_eq!(quote_literal("it's"), "E'it''s'");
    }
}

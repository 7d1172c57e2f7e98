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

/// A name as psql shows it: bare when it needs no quotes (lower case
/// letters, digits, `_`, not starting with a digit), quoted otherwise, so
/// `"My Schema"."Big T"` is not shown as the ambiguous `My Schema.Big T`.
pub fn display_ident(name: &str) -> String {
    let bare = name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    match bare {
        true => name.to_string(),
        false => quote_ident(name),
    }
}

/// An `E'...'` literal: quotes and backslashes escaped, so the result means
/// the same whatever `standard_conforming_strings` is.
pub fn quote_literal(value: &str) -> String {
    format!("E'{}'", value.replace('\\', "\\\\").replace('\'', "''"))
}

/// `name` with case and everything but letters and digits left out: how a
/// header's field or a document's key spells a column's name (`Order ID`,
/// `orderId` and `order_id` are all `orderid`).
pub fn folded_name(name: &str) -> String {
    name.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect()
}

/// `{1,2,3}`: server process ids as a PostgreSQL array literal, for a
/// `$1::int[]` parameter.
pub fn pid_array(pids: &[u32]) -> String {
    let list: Vec<String> = pids.iter().map(u32::to_string).collect();
    format!("{{{}}}", list.join(","))
}

/// A value as a field of PostgreSQL's text COPY format: backslashes, line
/// ends and tabs escaped.
pub fn copy_text_value(value: &str) -> String {
    value.replace('\\', "\\\\").replace('\n', "\\n").replace('\r', "\\r").replace('\t', "\\t")
}

/// A table as the user named it (`-t`, `--table`), quoted as SQL reads it
/// back: each part of a name psql would read (`sales.Orders` is
/// `"sales"."orders"`), or the whole when it is no such name.
pub fn quote_qualified_name(table: &str) -> String {
    match parse_qualified_name(table) {
        Some(parts) => parts.iter().map(|p| quote_ident(p)).collect::<Vec<_>>().join("."),
        None => quote_ident(table),
    }
}

/// A name as psql reads it in SQL: dot-separated parts, each either
/// double-quoted (kept as written, `""` standing for `"`) or bare (ASCII
/// letters folded to lower case, as the server folds them). `None` when it is
/// not such a name (an empty part, an unclosed quote, a quote inside a bare
/// part). So `"Sales 2024"."Q1.final"` is `[Sales 2024, Q1.final]` and
/// `Orders` is `[orders]`.
///
/// Why: users of psql write `\copy "My Schema"."Orders" ...`; sluice takes
/// names as written first, and this reading second, so both work.
pub fn parse_qualified_name(name: &str) -> Option<Vec<String>> {
    let mut parts = Vec::new();
    let mut chars = name.chars().peekable();
    loop {
        let mut part = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next()? {
                    '"' if chars.peek() == Some(&'"') => {
                        chars.next();
                        part.push('"');
                    }
                    '"' => break,
                    c => part.push(c),
                }
            }
        } else {
            while let Some(&c) = chars.peek().filter(|&&c| c != '.') {
                if c == '"' {
                    return None;
                }
                part.push(c.to_ascii_lowercase());
                chars.next();
            }
        }
        if part.is_empty() {
            return None;
        }
        parts.push(part);
        match chars.next() {
            None => return Some(parts),
            Some('.') => continue,
            Some(_) => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pids_make_an_array_literal() {
        assert_eq!(pid_array(&[]), "{}");
        assert_eq!(pid_array(&[12, 345]), "{12,345}");
    }

    #[test]
    fn quotes_identifiers_and_literals() {
        assert_eq!(quote_ident("Order \"Items\""), "\"Order \"\"Items\"\"\"");
        assert_eq!(quote_literal("\\N"), "E'\\\\N'");
        assert_eq!(quote_literal("it's"), "E'it''s'");
    }

    #[test]
    fn shows_names_quoted_only_when_psql_would() {
        assert_eq!(display_ident("orders_2024"), "orders_2024");
        assert_eq!(display_ident("_t"), "_t");
        assert_eq!(display_ident("Big T"), "\"Big T\"");
        assert_eq!(display_ident("Orders"), "\"Orders\"");
        assert_eq!(display_ident("2024"), "\"2024\"");
        assert_eq!(display_ident("a.b"), "\"a.b\"");
    }

    #[test]
    fn reads_names_as_psql_does() {
        let parsed = |name: &str| parse_qualified_name(name);
        let owned = |parts: &[&str]| Some(parts.iter().map(|p| p.to_string()).collect::<Vec<_>>());
        assert_eq!(parsed("Orders"), owned(&["orders"]));
        assert_eq!(parsed("Sales.Orders"), owned(&["sales", "orders"]));
        assert_eq!(parsed("\"My Schema\".\"we\"\"ird.T\""), owned(&["My Schema", "we\"ird.T"]));
        assert_eq!(parsed("\"Ünï\".Straße"), owned(&["Ünï", "straße"]));
        for not_a_name in ["", "a..b", ".a", "a.", "\"open", "a\"b", "\"a\"b", "\"\""] {
            assert_eq!(parsed(not_a_name), None, "{not_a_name}");
        }
    }
}

//! Deciding what to run before any byte is copied: the format, the target
//! columns and the COPY statement.

use crate::error::Error;
use crate::format::{FormatKind, FormatOptions};
use crate::sink::postgres::TableInfo;
use crate::source::Source;
use crate::sql::quote_ident;

/// The format from `--format`, or guessed from the first named file.
pub fn resolve_kind(given: Option<FormatKind>, sources: &[Source]) -> Result<FormatKind, Error> {
    if let Some(kind) = given {
        return Ok(kind);
    }
    let guessed: Vec<FormatKind> =
        sources.iter().filter_map(|s| s.path.as_deref().and_then(FormatKind::guess)).collect();
    match guessed.first() {
        Some(&kind) if guessed.iter().all(|&k| k == kind) => Ok(kind),
        Some(_) => Err(Error::Usage("the inputs have different extensions; say which format with --format".into())),
        None => Err(Error::Usage(format!(
            "cannot tell the format of {} from its name; pass --format csv, tsv or jsonl",
            sources[0].name
        ))),
    }
}

/// The columns COPY names: `--columns` (checked against the table), for
/// jsonl the table's one json/jsonb column, otherwise all of them (`None`).
pub fn choose_columns(
    table: &TableInfo,
    given: Option<&[String]>,
    kind: FormatKind,
) -> Result<Option<Vec<String>>, Error> {
    if let Some(columns) = given {
        for c in columns {
            if !table.columns.iter().any(|(name, _)| name == c) {
                return Err(Error::Target(format!(
                    "column \"{c}\" does not exist in table {}; its columns are: {}",
                    table.display(),
                    column_list(table)
                )));
            }
        }
        return Ok(Some(columns.to_vec()));
    }
    if kind != FormatKind::Jsonl {
        return Ok(None);
    }
    let json: Vec<&String> =
        table.columns.iter().filter(|(_, ty)| ty == "json" || ty == "jsonb").map(|(name, _)| name).collect();
    match json.as_slice() {
        [one] => Ok(Some(vec![(*one).clone()])),
        _ if table.columns.len() == 1 => Ok(Some(vec![table.columns[0].0.clone()])),
        [] => Err(Error::Target(format!(
            "table {} has no json or jsonb column for the documents; name one with --columns (columns: {})",
            table.display(),
            column_list(table)
        ))),
        _ => Err(Error::Target(format!(
            "table {} has several json columns; say which gets the documents with --columns",
            table.display()
        ))),
    }
}

fn column_list(table: &TableInfo) -> String {
    table.columns.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", ")
}

/// `COPY "s"."t" ("a", "b") FROM STDIN WITH (FORMAT csv, ...)`.
pub fn copy_statement(table: &TableInfo, columns: Option<&[String]>, format: &FormatOptions) -> String {
    let columns = match columns {
        Some(cols) => format!(" ({})", cols.iter().map(|c| quote_ident(c)).collect::<Vec<_>>().join(", ")),
        None => String::new(),
    };
    let options: Vec<String> = format.copy_options().into_iter().map(|(k, v)| format!("{k} {v}")).collect();
    format!("COPY {}{columns} FROM STDIN WITH ({})", table.quoted(), options.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(cols: &[(&str, &str)]) -> TableInfo {
        TableInfo {
            schema: "public".into(),
            name: "T x".into(),
            columns: cols.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect(),
            not_null: Vec::new(),
        }
    }

    #[test]
    fn jsonl_picks_the_single_json_column() {
        let t = table(&[("id", "bigint"), ("doc", "jsonb")]);
        assert_eq!(choose_columns(&t, None, FormatKind::Jsonl).unwrap(), Some(vec!["doc".to_string()]));
        let t2 = table(&[("a", "json"), ("b", "jsonb")]);
        assert!(choose_columns(&t2, None, FormatKind::Jsonl).is_err());
        assert_eq!(choose_columns(&t, None, FormatKind::Csv).unwrap(), None);
    }

    #[test]
    fn unknown_column_lists_the_real_ones() {
        let t = table(&[("id", "bigint")]);
        let err = choose_columns(&t, Some(&["nope".to_string()]), FormatKind::Csv).unwrap_err();
        assert_eq!(err.to_string(), "column \"nope\" does not exist in table public.T x; its columns are: id");
    }

    #[test]
    fn statement_quotes_every_identifier() {
        let t = table(&[("a", "int")]);
        let sql = copy_statement(&t, Some(&["a".into()]), &FormatOptions::new(FormatKind::Tsv));
        assert_eq!(sql, "COPY \"public\".\"T x\" (\"a\") FROM STDIN WITH (FORMAT text)");
    }
}

//! Keeps passwords out of everything sluice prints or writes, and the
//! input's control characters off the user's terminal.
//!
//! libpq does not put passwords in its messages, but a connection string the
//! user typed can come back in ours (for example in "connecting to ..."). The
//! CLI collects every secret it knows of (the password in `--db`, PGPASSWORD)
//! and masks them in each line before printing.
//!
//! Values from the input reach messages too (the server's reason for a
//! rejected value quotes it), and a file's escape sequences would color,
//! clear or rewrite the terminal, or hide lines of sluice's own output:
//! each line is made [`printable`] as it is masked.

/// The masks applied to output.
#[derive(Clone, Debug, Default)]
pub struct Redactor {
    secrets: Vec<String>,
}

impl Redactor {
    /// Secrets shorter than 3 characters are not masked: they would mangle
    /// ordinary text and are too weak to protect anyway.
    pub fn add(&mut self, secret: &str) {
        if secret.len() >= 3 && !self.secrets.iter().any(|s| s == secret) {
            self.secrets.push(secret.to_string());
            self.secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
    }

    /// `text` with the secrets masked, made [`printable`].
    pub fn apply(&self, text: &str) -> String {
        let mut out = text.to_string();
        for secret in &self.secrets {
            out = out.replace(secret.as_str(), "********");
        }
        printable(&out).into_owned()
    }
}

/// `text` with the control characters a terminal acts on (all but tab and
/// line feed: escape, carriage return, backspace, bell, and C1's) written
/// as Rust writes them in a string, `\u{1b}`.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let acted_on = |c: char| c.is_control() && c != '\t' && c != '\n';
    if !text.contains(acted_on) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match acted_on(c) {
            true => out.push_str(&c.escape_unicode().to_string()),
            false => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// `postgres://user:secret@host/db` → `postgres://user@host/db`; key=value
/// strings lose their `password=...`. Used to name the target in messages.
pub fn display_conninfo(conninfo: &str) -> String {
    if let Some(rest) = conninfo.strip_prefix("postgres://").or_else(|| conninfo.strip_prefix("postgresql://")) {
        let scheme = &conninfo[..conninfo.len() - rest.len()];
        let (authority, tail) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
        let authority = match authority.rsplit_once('@') {
            Some((user, host)) => format!("{}@{host}", user.split(':').next().unwrap_or("")),
            None => authority.to_string(),
        };
        let tail = strip_query_password(tail);
        return format!("{scheme}{authority}{tail}");
    }
    conninfo.split_whitespace().filter(|kv| !kv.trim_start().starts_with("password")).collect::<Vec<_>>().join(" ")
}

fn strip_query_password(tail: &str) -> String {
    let Some((path, query)) = tail.split_once('?') else {
        return tail.to_string();
    };
    let kept: Vec<&str> = query.split('&').filter(|kv| !kv.starts_with("password=")).collect();
    if kept.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{}", kept.join("&"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_written_out() {
        let r = Redactor::default();
        assert_eq!(r.apply("\"\u{1b}[31mRED\", \"a\u{7}\rb\u{9b}\""), "\"\\u{1b}[31mRED\", \"a\\u{7}\\u{d}b\\u{9b}\"");
        assert_eq!(r.apply("two\nlines\tand tab, caf\u{e9}"), "two\nlines\tand tab, caf\u{e9}");
        assert!(matches!(printable("plain"), std::borrow::Cow::Borrowed("plain")));
    }

    #[test]
    fn masks_known_secrets() {
        let mut r = Redactor::default();
        r.add("hunter22");
        r.add("x");
        assert_eq!(r.apply("pw hunter22 and x"), "pw ******** and x");
    }

    #[test]
    fn display_drops_passwords() {
        assert_eq!(display_conninfo("postgres://bob:s3cret@db1:5432/sales"), "postgres://bob@db1:5432/sales");
        assert_eq!(
            display_conninfo("postgresql://h/db?password=s3cret&sslmode=require"),
            "postgresql://h/db?sslmode=require"
        );
        assert_eq!(display_conninfo("host=h password=s3cret dbname=x"), "host=h dbname=x");
    }
}

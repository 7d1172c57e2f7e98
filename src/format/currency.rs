//! `--currency SIGN`: amounts written as spreadsheets format money
//! (`$1,234.50`, `-$5.00`, `1.234,50 €`, `CHF 1'234.50`), and negative
//! ones in accounting's parentheses (`($5.00)`, `(1,234.50)`), in number
//! columns. Excel and Google Sheets save a currency-formatted cell as it
//! is shown, so such a column comes out of "Save as CSV" with its sign
//! on every value, which no number type of PostgreSQL reads (its `money`
//! type does, for the sign of the server's `lc_monetary` only).
//!
//! One sign per load: it is removed where it stands before or after the
//! number, a minus or the parentheses around it. A value with another
//! sign (`€5` under `--currency '$'`) is rejected on the client (see
//! `convert::another_sign`) rather than loaded as dollars. Why our own: the rules
//! are a few lines beside [`super::convert`]'s marks, and the sign must
//! stay a small `Copy` value inside each column's conversion.

/// The most bytes a sign may have: `CHF`, `R$`, `zł`, `₹` and `kr.` fit.
const MOST_SIGN_BYTES: usize = 8;

/// A currency sign as `--currency` takes it, kept inline so that a
/// column's conversion stays `Copy`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Currency {
    bytes: [u8; MOST_SIGN_BYTES],
    len: u8,
}

/// An amount with its sign (or parentheses) taken off.
#[derive(Debug, PartialEq, Eq)]
pub struct Amount<'v> {
    /// Written with a minus before the sign or in parentheses.
    pub negative: bool,
    /// The number as written between them; `None` for a lone dash, which
    /// Excel's accounting format writes for 0 (`$ -`).
    pub number: Option<&'v [u8]>,
}

impl Currency {
    /// `--currency`'s value: the sign as the file writes it, without
    /// digits, spaces, quotes or the marks of a number.
    pub fn parse(text: &str) -> Result<Currency, String> {
        let odd = |c: char| c.is_ascii_digit() || c.is_whitespace() || "-+,()\"'".contains(c);
        if text.is_empty() || text == "." || text.len() > MOST_SIGN_BYTES || text.chars().any(odd) {
            return Err(format!(
                "\"{text}\" is no currency sign sluice reads: give the sign as the file writes it, without spaces or \
                 digits ($, €, £, CHF, R$; at most {MOST_SIGN_BYTES} bytes)"
            ));
        }
        let mut bytes = [0; MOST_SIGN_BYTES];
        bytes[..text.len()].copy_from_slice(text.as_bytes());
        Ok(Currency { bytes, len: text.len() as u8 })
    }

    /// The sign as given.
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(self.sign()).unwrap_or_default()
    }

    /// The sign quoted for the shell, as `--currency` takes it: `'$'`.
    pub fn flag_value(&self) -> String {
        format!("'{}'", self.as_str())
    }

    fn sign(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// `value` (trimmed, no-break spaces made plain) as an amount, when it
    /// is written with this sign or in parentheses; `None` otherwise.
    pub fn amount<'v>(&self, value: &'v [u8]) -> Option<Amount<'v>> {
        let (signed, unsigned) = self.without_sign(value);
        if signed && unsigned == b"-" {
            return Some(Amount { negative: false, number: None });
        }
        // `-$5.00`: the minus before the sign.
        let (minus, value) = match value.strip_prefix(b"-").map(<[u8]>::trim_ascii_start) {
            Some(rest) if rest.starts_with(self.sign()) => (true, rest),
            _ => (false, value),
        };
        let (signed, value) = self.without_sign(value);
        let inner = value.strip_prefix(b"(").and_then(|v| v.strip_suffix(b")")).map(<[u8]>::trim_ascii);
        let (parentheses, value) = match inner {
            Some(inner) if !minus => (true, inner),
            _ => (false, value),
        };
        // `($5.00)`: the sign inside them.
        let (signed, value) = match signed {
            false if parentheses => self.without_sign(value),
            _ => (signed, value),
        };
        (signed || parentheses).then_some(Amount { negative: minus || parentheses, number: Some(value) })
    }

    /// `value` without the sign before or after it (and the spaces between),
    /// and whether it had one.
    fn without_sign<'v>(&self, value: &'v [u8]) -> (bool, &'v [u8]) {
        let sign = self.sign();
        match value.strip_prefix(sign).or_else(|| value.strip_suffix(sign)) {
            Some(rest) => (true, rest.trim_ascii()),
            None => (false, value),
        }
    }
}

impl std::fmt::Debug for Currency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn amount<'v>(sign: &str, value: &'v str) -> Option<(bool, Option<&'v str>)> {
        let currency = Currency::parse(sign).unwrap();
        let amount = currency.amount(value.as_bytes())?;
        Some((amount.negative, amount.number.map(|n| std::str::from_utf8(n).unwrap())))
    }

    #[test]
    fn signs_minuses_and_parentheses_come_off_where_they_stand() {
        assert_eq!(amount("$", "$1,234.50"), Some((false, Some("1,234.50"))));
        assert_eq!(amount("$", "-$5.00"), Some((true, Some("5.00"))));
        assert_eq!(amount("$", "- $5.00"), Some((true, Some("5.00"))));
        assert_eq!(amount("$", "$-5.00"), Some((false, Some("-5.00"))), "the number's own minus stays");
        assert_eq!(amount("$", "($5.00)"), Some((true, Some("5.00"))));
        assert_eq!(amount("$", "$ (1,234.50)"), Some((true, Some("1,234.50"))));
        assert_eq!(amount("$", "(1,234.50)"), Some((true, Some("1,234.50"))), "parentheses alone");
        assert_eq!(amount("€", "1.234,50 €"), Some((false, Some("1.234,50"))));
        assert_eq!(amount("€", "-1,50 €"), Some((false, Some("-1,50"))));
        assert_eq!(amount("CHF", "CHF 1'234.50"), Some((false, Some("1'234.50"))));
        assert_eq!(amount("R$", "R$ 10,00"), Some((false, Some("10,00"))));
        assert_eq!(amount("$", "$ -"), Some((false, None)), "Excel's accounting zero");
        assert_eq!(amount("€", "- €"), Some((false, None)));
        assert_eq!(amount("$", "-$-5"), Some((true, Some("-5"))), "two minuses: the caller refuses it");
        for plain in ["1,234.50", "-5", "€5", "5$5", "NaN", "", "(5"] {
            assert_eq!(amount("$", plain), None, "{plain}");
        }
    }

    #[test]
    fn signs_are_taken_as_written_and_odd_ones_refused() {
        for sign in ["$", "€", "CHF", "R$", "kr.", "zł", "₹", "US$"] {
            assert_eq!(Currency::parse(sign).unwrap().as_str(), sign);
        }
        for odd in ["", " $", "1$", "-", "(", ".", "'", "TOOLONGSIGN", "$ US"] {
            let refused = Currency::parse(odd).expect_err(odd);
            assert!(refused.contains("is no currency sign sluice reads"), "{refused}");
        }
        assert_eq!(Currency::parse("€").unwrap().flag_value(), "'€'");
    }
}

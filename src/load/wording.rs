//! The server's words for the refusals sluice's own lookups find (a
//! CHECK, a NULL where none goes, a key the table holds: see
//! [`check_constraint`](super::check_constraint) and
//! [`key_check`](super::key_check)), so that a record they reject reads
//! as if COPY had refused it.
//!
//! Why our own: the server writes its messages in the language of its
//! `lc_messages` and has no function that writes one for us. In English
//! sluice writes them. In another language each message is the one COPY
//! gave for the same constraint (or column), the first the load met, and
//! a detail is put in the words COPY's detail had around its part in
//! parentheses (the failing row, the key and its value). A refusal a
//! lookup finds before COPY met its constraint is left to COPY, which
//! words it. Why not leave such servers to COPY alone: 200,000 records
//! with every tenth breaking a CHECK took 174,025 COPYs and 4.0 s under
//! `lc_messages = de_DE.UTF-8`, against 18 COPYs and 0.26 s worded so
//! (bench/README.md).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::sink::CopyRefusal;

/// The words of one kind of lookup's refusals.
pub(super) struct Wording {
    /// Whether the server writes English: from `lc_messages`, unset by a
    /// refusal of COPY's worded otherwise (a server started with
    /// `LANGUAGE=de` in its environment writes German under `C.UTF-8`).
    english: AtomicBool,
    learned: Mutex<Learned>,
}

/// The words COPY's refusals gave.
#[derive(Default)]
struct Learned {
    /// Each message, by what the refusal is for (a constraint, a column).
    messages: HashMap<String, String>,
    /// The detail's words before its part in parentheses and after it.
    around: Option<(String, String)>,
}

impl Wording {
    pub fn new(lc_messages: &str) -> Wording {
        Wording { english: AtomicBool::new(in_english(lc_messages)), learned: Mutex::default() }
    }

    /// Takes the words of COPY's `refusal` for `what` (a name the caller
    /// gives the constraint or column), whose message in English is
    /// `english`. The first refusal for each is kept.
    pub fn learn(&self, what: &str, english: &str, refusal: &CopyRefusal) {
        if self.english.load(Ordering::Relaxed) {
            if english == refusal.message {
                return;
            }
            self.english.store(false, Ordering::Relaxed);
        }
        let Ok(mut learned) = self.learned.lock() else { return };
        learned.messages.entry(what.to_string()).or_insert_with(|| refusal.message.clone());
        if learned.around.is_none() {
            learned.around = refusal.detail.as_deref().and_then(around_parentheses);
        }
    }

    /// The message and detail of a refusal for `what`, whose detail's part
    /// in parentheses is `inner` (`None`: no detail); `english` writes
    /// them in English. `None` where they are not known yet.
    pub fn words(
        &self,
        what: &str,
        inner: Option<&str>,
        english: impl FnOnce() -> Option<(String, Option<String>)>,
    ) -> Option<(String, Option<String>)> {
        if self.english.load(Ordering::Relaxed) {
            return english();
        }
        let learned = self.learned.lock().ok()?;
        let message = learned.messages.get(what)?.clone();
        let detail = match inner {
            Some(inner) => Some(learned.around.as_ref().map(|(before, after)| format!("{before}{inner}{after}"))?),
            None => None,
        };
        Some((message, detail))
    }

    /// How many words are known, counting the detail's: a lookup that left
    /// refusals unworded is worth running again once this grows. 0 in
    /// English, where every refusal is worded.
    pub fn known(&self) -> usize {
        if self.english.load(Ordering::Relaxed) {
            return 0;
        }
        let Ok(learned) = self.learned.lock() else { return 0 };
        learned.messages.len() + usize::from(learned.around.is_some())
    }
}

/// Whether the server writes its messages in English under `lc_messages`.
fn in_english(lc_messages: &str) -> bool {
    let lower = lc_messages.to_ascii_lowercase();
    ["", "c", "posix"].contains(&lower.as_str()) || lower.starts_with("en") || lower.starts_with("c.")
}

/// The words before and after the part in parentheses of a `detail`
/// (`Failing row contains (1, -1).`, `Key (id)=(7) already exists.`).
/// `None` where those words hold a parenthesis themselves, which would
/// leave the part's ends unsure.
fn around_parentheses(detail: &str) -> Option<(String, String)> {
    let (open, close) = (detail.find('(')?, detail.rfind(')')?);
    let (before, after) = (&detail[..open], &detail[close + 1..]);
    (open < close && !before.contains(')') && !after.contains('(')).then(|| (before.to_string(), after.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(message: &str, detail: &str) -> CopyRefusal {
        CopyRefusal { message: message.into(), detail: Some(detail.into()), ..CopyRefusal::default() }
    }

    #[test]
    fn english_is_taken_from_lc_messages() {
        for english in ["", "C", "POSIX", "C.UTF-8", "en_US.UTF-8", "English_United States.1252"] {
            assert!(in_english(english), "{english}");
        }
        for other in ["de_DE.UTF-8", "fr_FR", "ja_JP.utf8"] {
            assert!(!in_english(other), "{other}");
        }
    }

    #[test]
    fn other_languages_are_worded_as_copy_worded_them() {
        let english = || Some(("new row violates c".to_string(), Some("Failing row contains (1).".to_string())));
        let german = Wording::new("de_DE.UTF-8");
        assert_eq!(german.words("c", Some("(1)"), english), None, "not met yet");
        assert_eq!(german.known(), 0);
        german.learn("c", "new row violates c", &refusal("verletzt »c«", "Fehlgeschlagene Zeile enthält (2, a(b)."));
        assert_eq!(german.known(), 2);
        let worded = german.words("c", Some("(7, x)"), english);
        assert_eq!(worded, Some(("verletzt »c«".into(), Some("Fehlgeschlagene Zeile enthält (7, x).".into()))));
        assert_eq!(german.words("d", Some("(7)"), english), None, "another constraint");
        assert_eq!(german.words("c", None, english), Some(("verletzt »c«".into(), None)));
        // The first refusal's words are kept.
        german.learn("c", "new row violates c", &refusal("other", "other (1)"));
        assert_eq!(german.words("c", None, english).unwrap().0, "verletzt »c«");
    }

    #[test]
    fn a_refusal_worded_otherwise_than_in_english_turns_english_off() {
        let english = || Some(("new row violates c".to_string(), None));
        let wording = Wording::new("C.UTF-8");
        assert_eq!(wording.words("c", None, english).unwrap().0, "new row violates c");
        wording.learn("c", "new row violates c", &refusal("new row violates c", "Failing row contains (1)."));
        assert_eq!(wording.known(), 0, "still English");
        wording.learn("c", "new row violates c", &refusal("verletzt »c«", "Zeile (1)."));
        assert_eq!(wording.words("c", None, english).unwrap().0, "verletzt »c«");
    }

    #[test]
    fn the_detail_is_cut_around_its_parentheses() {
        let around = |d: &str| around_parentheses(d).map(|(b, a)| format!("{b}|{a}"));
        assert_eq!(around("Failing row contains (1, a(b), c).").as_deref(), Some("Failing row contains |."));
        assert_eq!(around("Key (id)=(7) already exists.").as_deref(), Some("Key | already exists."));
        assert_eq!(
            around("Schlüssel »(id)=(7)« existiert bereits.").as_deref(),
            Some("Schlüssel »|« existiert bereits.")
        );
        assert_eq!(around("no row"), None);
        assert_eq!(around("a) (b"), None);
    }
}

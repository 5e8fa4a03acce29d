//! The line that names what the daemon protects: the restart-critical
//! sessions, said when the fleet is first listed and again whenever a
//! session joins or leaves that set, each such session by its title.

use std::collections::BTreeMap;

/// Titles named in one line; the rest are counted.
const MAX_NAMED: usize = 10;

/// The line for a critical set that is now `now` (id → title) and was
/// `before` (`None`: not listed yet); `None` when nothing changed.
pub(super) fn change_line(
    before: Option<&BTreeMap<String, String>>,
    now: &BTreeMap<String, String>,
) -> Option<String> {
    let n = now.len();
    let s = if n == 1 { "" } else { "s" };
    let head = format!("watching {n} restart-critical session{s}");
    let Some(before) = before else {
        if n == 0 {
            return Some(format!(
                "{head}: none is named conductor-* or in group conductor, and no autorestart marker names one"
            ));
        }
        return Some(format!("{head}: {}", named(now.iter())));
    };
    let joined = now.iter().filter(|(id, _)| !before.contains_key(*id));
    let left = before.iter().filter(|(id, _)| !now.contains_key(*id));
    let (joined, left): (Vec<_>, Vec<_>) = (joined.collect(), left.collect());
    let mut parts = Vec::new();
    if !joined.is_empty() {
        parts.push(format!("joined: {}", named(joined.into_iter())));
    }
    if !left.is_empty() {
        parts.push(format!("left: {}", named(left.into_iter())));
    }
    (!parts.is_empty()).then(|| format!("{head}; {}", parts.join("; ")))
}

/// At most [`MAX_NAMED`] titles (an untitled session by its id), then
/// "and M more".
fn named<'a>(sessions: impl ExactSizeIterator<Item = (&'a String, &'a String)>) -> String {
    let total = sessions.len();
    let names: Vec<&str> = sessions
        .take(MAX_NAMED)
        .map(|(id, title)| if title.is_empty() { id } else { title }.as_str())
        .collect();
    let more = total - names.len();
    let mut line = names.join(", ");
    if more > 0 {
        line += &format!(" and {more} more");
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(titles: &[&str]) -> BTreeMap<String, String> {
        titles
            .iter()
            .enumerate()
            .map(|(i, t)| (format!("{i:08x}-1755890000"), t.to_string()))
            .collect()
    }

    #[test]
    fn the_first_listing_names_every_critical_session_up_to_ten() {
        let two = set(&["conductor-ops", "conductor-two"]);
        assert_eq!(
            change_line(None, &two).unwrap(),
            "watching 2 restart-critical sessions: conductor-ops, conductor-two"
        );
        let titles: Vec<String> = (0..13).map(|i| format!("conductor-{i:02}")).collect();
        let many = set(&titles.iter().map(String::as_str).collect::<Vec<_>>());
        let line = change_line(None, &many).unwrap();
        assert!(
            line.starts_with("watching 13 restart-critical sessions: conductor-00, "),
            "{line}"
        );
        assert!(line.ends_with("conductor-09 and 3 more"), "{line}");
        let none = change_line(None, &BTreeMap::new()).unwrap();
        assert!(
            none.starts_with("watching 0 restart-critical sessions: none"),
            "{none}"
        );
    }

    #[test]
    fn a_session_that_joins_or_leaves_is_named_and_no_change_says_nothing() {
        let before = set(&["conductor-ops", "conductor-two"]);
        assert_eq!(change_line(Some(&before), &before), None);
        let mut now = before.clone();
        now.insert("ffffffff-1755890000".into(), "conductor-new".into());
        now.remove("00000001-1755890000");
        assert_eq!(
            change_line(Some(&before), &now).unwrap(),
            "watching 2 restart-critical sessions; joined: conductor-new; left: conductor-two"
        );
        let mut untitled = before.clone();
        untitled.insert("abcdef01-1755890000".into(), String::new());
        assert_eq!(
            change_line(Some(&before), &untitled).unwrap(),
            "watching 3 restart-critical sessions; joined: abcdef01-1755890000"
        );
    }
}

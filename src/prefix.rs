//! Ids the user may shorten, like git's: an exact id, or a prefix only one id starts with.

/// What a shortened id named.
#[derive(Debug, PartialEq, Eq)]
pub enum Found<'a, T> {
    /// Exactly one item (the id in full, or the only one starting with the prefix).
    One(&'a T),
    /// No id starts with it.
    None,
    /// Several ids start with it: their ids, each once, in order.
    Ambiguous(Vec<String>),
}

/// The item of `items` whose id (`id_of`) is `given`, or the only one whose id starts with it.
/// An empty `given` names nothing.
pub fn find<'a, T>(items: &'a [T], given: &str, id_of: impl Fn(&T) -> &str) -> Found<'a, T> {
    if given.is_empty() {
        return Found::None;
    }
    if let Some(t) = items.iter().find(|t| id_of(t) == given) {
        return Found::One(t);
    }
    let matching: Vec<&T> = items
        .iter()
        .filter(|t| id_of(t).starts_with(given))
        .collect();
    let mut ids: Vec<String> = Vec::new();
    for t in &matching {
        if !ids.iter().any(|i| i == id_of(t)) {
            ids.push(id_of(t).to_string());
        }
    }
    match (matching.first(), ids.len()) {
        (None, _) => Found::None,
        (Some(t), 1) => Found::One(t),
        _ => Found::Ambiguous(ids),
    }
}

/// The fewest characters of a shortened id taken where something is deleted or removed: a
/// shorter prefix (`keep remove 0`) names nothing, even when only one id starts with it.
pub const MIN_TO_REMOVE: usize = 4;

/// [`find`] where the named item is deleted or removed: the id in full, or a prefix of at least
/// [`MIN_TO_REMOVE`] characters only it starts with. `Err` is the sentence that refuses it
/// (`what` names the kind of id: "keep rule", "finding id").
pub fn find_to_remove<'a, T>(
    items: &'a [T],
    given: &str,
    what: &str,
    id_of: impl Fn(&T) -> &str,
) -> Result<Option<&'a T>, String> {
    match find(items, given, &id_of) {
        Found::One(t) if id_of(t) == given || given.chars().count() >= MIN_TO_REMOVE => Ok(Some(t)),
        Found::One(t) => Err(format!(
            "{what} '{given}' is too short to act on: give at least {MIN_TO_REMOVE} characters (it starts {})",
            id_of(t)
        )),
        Found::None => Ok(None),
        Found::Ambiguous(ids) => Err(ambiguous(what, given, &ids)),
    }
}

/// The refusal of an ambiguous prefix, naming the candidates.
pub fn ambiguous(what: &str, given: &str, ids: &[String]) -> String {
    format!(
        "{what} '{given}' is ambiguous: it starts {}; give more characters",
        ids.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id<'x>(s: &'x &str) -> &'x str {
        s
    }

    #[test]
    fn an_exact_id_wins_over_longer_ids_it_starts() {
        let ids = ["ab", "abc", "abd"];
        assert_eq!(find(&ids, "ab", id), Found::One(&"ab"));
    }

    #[test]
    fn a_unique_prefix_names_one_and_a_shared_one_lists_the_candidates() {
        let ids = ["abc1", "abd2", "xyz"];
        assert_eq!(find(&ids, "x", id), Found::One(&"xyz"));
        assert_eq!(find(&ids, "abd", id), Found::One(&"abd2"));
        assert_eq!(
            find(&ids, "ab", id),
            Found::Ambiguous(vec!["abc1".into(), "abd2".into()])
        );
        assert_eq!(find(&ids, "q", id), Found::None);
        assert_eq!(find(&ids, "", id), Found::None);
    }

    #[test]
    fn what_is_removed_takes_the_whole_id_or_at_least_four_characters() {
        let ids = ["0a1b2c3d", "9f", "77aa00"];
        let get = |g| find_to_remove(&ids, g, "keep rule", id);
        assert_eq!(get("0a1b"), Ok(Some(&"0a1b2c3d")));
        assert_eq!(get("9f"), Ok(Some(&"9f")), "a whole id, however short");
        assert!(get("0").unwrap_err().contains("at least 4 characters"));
        assert!(get("0a1").is_err());
        assert_eq!(get("zzzz"), Ok(None));
    }

    #[test]
    fn several_items_with_one_id_are_not_ambiguous() {
        let ids = ["abc", "abc", "xyz"];
        assert_eq!(find(&ids, "a", id), Found::One(&"abc"));
    }
}

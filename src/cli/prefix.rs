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
    fn several_items_with_one_id_are_not_ambiguous() {
        let ids = ["abc", "abc", "xyz"];
        assert_eq!(find(&ids, "a", id), Found::One(&"abc"));
    }
}

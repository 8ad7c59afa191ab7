//! `--older-than`, `--min-size`, `--product`, `--kind`: the filters of `scan`, `prune` and `plan`.

use smolsweep::model::FindingKind;
use smolsweep::model::Product;
use smolsweep::{parse_age_flag, parse_size_flag, Filter};

#[derive(Debug, Clone, Default, clap::Args)]
pub struct FilterArgs {
    /// Only items whose newest change is at least this old: 7d, 12h, 30m, 2w (the unit is
    /// required: s, m, h, d or w).
    #[arg(long, value_name = "AGE", value_parser = parse_age_flag)]
    pub older_than: Option<u64>,
    /// Only items at least this large: 100M, 1.5G, 512k, 4096B (the unit is required).
    #[arg(long, value_name = "SIZE", value_parser = parse_size_flag)]
    pub min_size: Option<u64>,
    /// Only this product's items, machines and VM processes (repeatable).
    #[arg(long, value_name = "PRODUCT", value_parser = ["celesto", "smolvm"])]
    pub product: Vec<String>,
    /// Only items of this kind (repeatable): the name the scan shows (`orphaned-disks`) or
    /// the JSON one (`celesto.orphan_disk`).
    #[arg(long, value_name = "KIND", value_parser = KindName { many: true })]
    pub kind: Vec<String>,
}

/// `--kind` of `keep add`: one kind, by its short name or its `smolsweep.scan/1` string; the
/// value is the string.
pub(crate) fn kind_parser() -> KindName {
    KindName { many: false }
}

/// A kind as a person names it: its short name (`orphaned-disks`, what the scan shows) or its
/// `smolsweep.scan/1` string. Parses to the string when the name means one kind; `many`
/// also takes a short name two products' kinds share (`mount-points`), kept as typed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KindName {
    many: bool,
}

impl clap::builder::TypedValueParser for KindName {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        let name = value.to_string_lossy();
        if name == "help" {
            // `--kind help`: the command prints the table of kinds.
            return Ok(name.into_owned());
        }
        let kinds = FindingKind::named(&name);
        let flag = arg.map_or("--kind".to_string(), |a| format!("--{}", a.get_id()));
        let refuse = |why: String| {
            clap::Error::raw(
                clap::error::ErrorKind::InvalidValue,
                format!("'{name}' for {flag}: {why}\n"),
            )
            .with_cmd(cmd)
        };
        match kinds.as_slice() {
            [] => Err(refuse(match did_you_mean(&name) {
                Some(k) => format!(
                    "no kind is called that; did you mean {k}? (`smolsweep kinds` lists them all)"
                ),
                None => "no kind is called that; `smolsweep kinds` lists them all, like \
                         orphaned-disks or celesto.orphan_disk"
                    .into(),
            })),
            [k] => Ok(k.as_str().to_string()),
            ks if self.many => Ok(ks[0].short().to_string()),
            ks => Err(refuse(format!(
                "it names {}; name one",
                ks.iter()
                    .map(|k| k.as_str())
                    .collect::<Vec<_>>()
                    .join(" and ")
            ))),
        }
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        let mut names: Vec<&'static str> = FindingKind::ALL.iter().map(|k| k.short()).collect();
        names.sort_unstable();
        names.dedup();
        let ids = FindingKind::ALL.iter().map(|k| k.as_str());
        Some(Box::new(
            names
                .into_iter()
                .chain(ids)
                .map(clap::builder::PossibleValue::new),
        ))
    }
}

impl FilterArgs {
    pub fn filter(&self) -> Filter {
        Filter {
            older_than_secs: self.older_than,
            min_bytes: self.min_size,
            products: self
                .product
                .iter()
                .map(|p| match p.as_str() {
                    "celesto" => Product::Celesto,
                    _ => Product::Smolvm,
                })
                .collect(),
            kinds: self
                .kind
                .iter()
                .flat_map(|k| FindingKind::named(k))
                .collect(),
        }
    }
}

/// The kind name nearest to `name` (fewest single-character edits, at most a third of its
/// length), for a "did you mean".
fn did_you_mean(name: &str) -> Option<&'static str> {
    let name = name.trim().to_ascii_lowercase();
    FindingKind::ALL
        .iter()
        .flat_map(|k| [k.short(), k.as_str()])
        .map(|k| (edits(&name, k), k))
        .filter(|(d, _)| *d <= name.chars().count().div_ceil(3))
        .min()
        .map(|(_, k)| k)
}

/// Levenshtein distance between `a` and `b`, by characters.
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod did_you_mean_tests {
    #[test]
    fn a_kind_name_one_letter_off_suggests_the_kind_and_nonsense_suggests_none() {
        assert_eq!(super::did_you_mean("orphan-disks"), Some("orphaned-disks"));
        assert_eq!(super::did_you_mean("orphaned-disk"), Some("orphaned-disks"));
        assert_eq!(super::did_you_mean("zzzzzz"), None);
    }
}

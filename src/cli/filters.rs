//! `--older-than`, `--min-size`, `--product`, `--kind`: the filters of `scan`, `prune` and `plan`.

use smolsweep::filter::{parse_age, parse_size, Filter};
use smolsweep::model::FindingKind;
use smolsweep::model::Product;

#[derive(Debug, Clone, Default, clap::Args)]
pub struct FilterArgs {
    /// Only items whose newest change is at least this old: 7d, 12h, 30m, 2w.
    #[arg(long, value_name = "AGE", value_parser = parse_age)]
    pub older_than: Option<u64>,
    /// Only items at least this large: 100M, 1.5G, 512k.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub min_size: Option<u64>,
    /// Only this product's items (repeatable).
    #[arg(long, value_name = "PRODUCT", value_parser = ["celesto", "smolvm"])]
    pub product: Vec<String>,
    /// Only items of this kind (repeatable), for example `celesto.orphan_disk`.
    #[arg(long, value_name = "KIND", value_parser = kind_parser())]
    pub kind: Vec<String>,
}

/// Every kind's `smolsweep.scan/1` string, for `--kind` (and shell completion).
pub(crate) fn kind_parser() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(FindingKind::ALL.iter().map(|k| k.as_str()))
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
                .filter_map(|k| FindingKind::parse(k))
                .collect(),
        }
    }
}

//! `smolsweep verify`: prove that no machine, VM directory or VM process of this HOME is left
//! (read-only).

use std::path::PathBuf;

use smolsweep::model::Platform;
use smolsweep::uninstall::plan;
use smolsweep::uninstall::verify::{self, Proof, VerifyOptions};

use super::uninstall::{env_or_exit, ProductChoice};

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// A directory that must not have been modified since --since.
    #[arg(long, requires = "since")]
    pub protected: Option<PathBuf>,
    /// Unix seconds, YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ (UTC).
    #[arg(long, requires = "protected")]
    pub since: Option<String>,
    /// Only check this product.
    #[arg(long, value_enum, default_value = "all")]
    pub product: ProductChoice,
    /// A directory that must be gone (repeatable).
    #[arg(long = "removed-root")]
    pub removed_roots: Vec<PathBuf>,
    /// Print JSON instead of key=value lines.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: VerifyArgs) -> i32 {
    let env = match env_or_exit() {
        Ok(e) => e,
        Err(c) => return c,
    };
    let protected = match (&args.protected, &args.since) {
        (Some(dir), Some(since)) => match verify::parse_since(since) {
            Some(t) => Some((dir.clone(), t)),
            None => {
                eprintln!("smolsweep: --since: expected Unix seconds, YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ, got '{since}'");
                return 2;
            }
        },
        _ => None,
    };
    let opts = VerifyOptions {
        products: plan::ProductChoice::from(args.product).products(),
        removed_roots: args.removed_roots.clone(),
        protected,
    };
    let proof = verify::verify(&env, Platform::current(), &opts);
    print_proof(&proof, args.json);
    if proof.is_clean() {
        0
    } else {
        1
    }
}

fn print_proof(proof: &Proof, json: bool) {
    if json {
        crate::cli::out::json(proof);
    } else {
        crate::cli::out::raw(&verify::render_kv(proof));
    }
}

//! The line a person reads for one planned action (issue 31): a machine's or sandbox's stop or
//! delete in its product's one noun, and a delete of one that runs says so and that deleting
//! it stops it first. Every other action reads as its plan summary. The CLI's plan and dry
//! run, the confirmation's lines and `why`'s "Its plan" show this line.

use crate::model::human_bytes;
use crate::plan::{Action, PlannedAction};

/// What a person reads for `a`.
pub fn action_line(a: &PlannedAction) -> String {
    match &a.action {
        Action::StopMachine {
            product,
            name,
            state,
            ..
        } => format!(
            "stop {} {} '{name}' ({state})",
            product.display_name(),
            product.noun()
        ),
        Action::DeleteMachine {
            product,
            name,
            bytes,
            ephemeral: false,
            children,
            pid,
            ..
        } => {
            let with = match children.is_empty() {
                true => String::new(),
                false => format!(
                    ", with the {} branched from it (--cascade): {}",
                    product.nouns(),
                    children.join(", ")
                ),
            };
            let running = match pid {
                Some(pid) => {
                    format!("; it is running (VM process {pid}): deleting it stops it first")
                }
                None => String::new(),
            };
            format!(
                "delete {} {} '{name}' ({}){with}{running}",
                product.display_name(),
                product.noun(),
                human_bytes(*bytes)
            )
        }
        _ => a.summary.clone(),
    }
}

//! Reading a file a user or a timer names (a plan, a saved report, a policy, settings) without
//! blocking on a FIFO or device and without reading more than a cap: the one way the CLI and the
//! desktop read such files.

pub use crate::fsread::{
    read_input, read_input_text, InputError, MAX_PLAN_BYTES, MAX_REPORT_BYTES, MAX_SETTINGS_BYTES,
};

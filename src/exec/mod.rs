pub mod detach;
pub mod machines;
pub mod reap;

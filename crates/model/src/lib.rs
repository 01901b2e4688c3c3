//! rivumi-compact, the model layer: sources (bytes, read once) and the canonical transcript model, a borrowed view of them.
//!
//! One layer of the workspace (see the `rivumi-compact` crate doc): it depends on the crate
//! below it only, and re-exports that crate's modules so that `crate::` paths read the same
//! in every layer.

pub use rivumi_leaf::{batch, error, mapped, scan, signals, text, ui, walk};

pub mod source;
pub mod transcript;

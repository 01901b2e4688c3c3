//! rivumi-compact, the read layer: sources, the canonical transcript model, the importers and detection, the inputs the arguments name.
//!
//! One layer of the workspace (see the `rivumi-compact` crate doc): it depends on the crate
//! below it only, and re-exports that crate's modules so that `crate::` paths read the same
//! in every layer.

pub use rivumi_leaf::{batch, error, mapped, scan, signals, text, ui};

pub mod formats;
pub mod inputs;
pub mod source;
pub mod transcript;

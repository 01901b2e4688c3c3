//! rivumi-compact, the re-anchor layer: the facts gathered and every text the tool injects.
//!
//! One layer of the workspace (see the `rivumi-compact` crate doc): it depends on the crate
//! below it only, and re-exports that crate's modules so that `crate::` paths read the same
//! in every layer.

pub use rivumi_tokens::{
    batch, config, error, formats, inputs, mapped, scan, signals, source, text, tokens, transcript, ui, walk,
};

pub mod reanchor;
pub mod render;

//! rivumi-compact, the decide layer: the two denominators, the fallback, checkpoints, a typed plan.
//!
//! One layer of the workspace (see the `rivumi-compact` crate doc): it depends on the crate
//! below it only, and re-exports that crate's modules so that `crate::` paths read the same
//! in every layer.

pub use rivumi_render::{
    batch, config, error, formats, inputs, mapped, reanchor, render, scan, signals, source, text, tokens, transcript,
    ui, walk,
};

pub mod policy;

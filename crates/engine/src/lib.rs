//! rivumi-compact, the apply layer: hooks and the engine that gives the plan.
//!
//! One layer of the workspace (see the `rivumi-compact` crate doc): it depends on the crate
//! below it only, and re-exports that crate's modules so that `crate::` paths read the same
//! in every layer.

pub use rivumi_policy::{
    batch, config, error, formats, inputs, mapped, policy, reanchor, render, scan, signals, source, text, tokens,
    transcript, ui, walk,
};

pub mod engine;
pub mod hooks;

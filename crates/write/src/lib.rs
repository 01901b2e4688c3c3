//! rivumi-compact, the write layer: canonical and chat outputs, session write-back, reports.
//!
//! One layer of the workspace (see the `rivumi-compact` crate doc): it depends on the crate
//! below it only, and re-exports that crate's modules so that `crate::` paths read the same
//! in every layer.

pub use rivumi_engine::{
    batch, config, engine, error, formats, hooks, inputs, mapped, policy, reanchor, render, scan, signals, source,
    text, tokens, transcript, ui, walk,
};

pub mod output;
pub mod report;
pub mod resume;

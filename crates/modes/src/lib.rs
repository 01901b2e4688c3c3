//! rivumi-compact, the modes: run, stats, dataset, replay, chart, check, validate.
//!
//! One layer of the workspace (see the `rivumi-compact` crate doc): it depends on the crate
//! below it only, and re-exports that crate's modules so that `crate::` paths read the same
//! in every layer.

pub use rivumi_write::{
    batch, config, engine, error, formats, hooks, inputs, mapped, output, policy, reanchor, render, report, resume,
    scan, signals, source, text, tokens, transcript, ui, walk,
};

pub mod chart;
pub mod check;
pub mod dataset;
pub mod replay;
pub mod run;
pub mod stats;
pub mod validate;

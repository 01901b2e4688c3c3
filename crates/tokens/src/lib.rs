//! rivumi-compact, the measure layer: token estimates and real tokenizers.
//!
//! One layer of the workspace (see the `rivumi-compact` crate doc): it depends on the crate
//! below it only, and re-exports that crate's modules so that `crate::` paths read the same
//! in every layer.

pub use rivumi_config::{
    batch, config, error, formats, inputs, mapped, scan, signals, source, text, transcript, ui, walk,
};

pub mod tokens;

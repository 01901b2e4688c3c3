//! rivumi-compact, the formats layer: the importers and detection, the inputs the arguments name.
//!
//! One layer of the workspace (see the `rivumi-compact` crate doc): it depends on the crate
//! below it only, and re-exports that crate's modules so that `crate::` paths read the same
//! in every layer. Adding an input format is work in this crate only (an importer in
//! `formats/`, its detection and its `InputFormat` variant in `formats/mod.rs`).

pub use rivumi_model::{batch, error, mapped, scan, signals, source, text, transcript, ui, walk};

pub mod formats;
pub mod inputs;

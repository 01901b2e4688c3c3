//! rivumi-compact, the leaf layer: errors and exit codes, the printer, text and JSON literals, the validating scanner, signals, batches, mapped inputs.

pub mod batch;
pub mod error;
pub mod mapped;
pub mod scan;
pub mod signals;
pub mod text;
pub mod ui;
pub mod walk;

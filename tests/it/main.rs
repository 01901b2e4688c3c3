//! The one integration-test binary: runs the real executable with a clean environment.

mod accounting;
mod batch;
mod built;
mod check;
mod cli;
mod compressed;
mod current;
mod dataset;
mod docs;
mod errors;
mod fidelity;
mod golden;
mod hooks;
mod hostile;
mod hostile_surfaces;
mod mapped;
mod names;
mod properties;
mod readme;
mod realdata;
mod replay;
mod reported;
mod resume;
mod robust;
mod support;

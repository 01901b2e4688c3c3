//! `rivumi-compact`: Rivumi's two-threshold compaction policy, offline, over agent
//! transcripts. The data flow is the architecture:
//! read ([`transcript`], [`formats`]) → measure ([`tokens`], [`policy::occupancy`]) →
//! decide and compact ([`policy`]) → re-anchor ([`reanchor`], [`render`]) → write ([`output`]).
//!
//! ```
//! use rivumi_compact::{engine::{self, Settings}, config::Config};
//! let input = br#"{"type":"message","id":"m1","turn":"t1","role":"user","content":"hi"}
//! "#;
//! let settings = Settings::default();
//! let done = engine::process(input, std::path::Path::new("example.jsonl"), &settings).unwrap();
//! assert_eq!(done.plan.decision.action.as_str(), "none");
//! ```

pub mod batch;
pub mod check;
pub mod cli;
pub mod config;
pub mod dataset;
pub mod engine;
pub mod error;
pub mod formats;
pub mod hooks;
pub mod manpage;
pub mod output;
pub mod policy;
pub mod reanchor;
pub mod render;
pub mod report;
pub mod signals;
pub mod source;
pub mod stats;
pub mod tokens;
pub mod transcript;
pub mod ui;
pub mod validate;

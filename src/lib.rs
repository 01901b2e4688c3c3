//! `rivumi-compact`: Rivumi's two-threshold compaction policy, offline, over agent
//! transcripts. The data flow is the architecture, one module a step:
//!
//! 1. read: [`source`] (bytes, read once) → [`formats`] (importers, detection) →
//!    [`transcript`] (the canonical model, a borrowed view of the bytes);
//! 2. configure: [`config`] (typed layers: defaults < session < file < flags);
//! 3. measure: [`tokens`] and [`policy`]'s cumulative usage and occupancy;
//! 4. decide and compact: [`policy`] proposes (two denominators, fallback, checkpoint,
//!    lifecycle); [`engine`] applies the user's verdicts ([`hooks`]) once;
//! 5. re-anchor: [`reanchor`] gathers facts, [`render`] writes every text;
//! 6. write: [`output`] (transcript, out-dir, atomic files), [`report`], [`stats`],
//!    [`check`], [`validate`]; [`dataset`] runs steps 1–6 per line of a dataset;
//!    [`replay`] walks steps 1–3 point by point (profiles: [`config::Profile`]) and
//!    [`chart`] draws what it found.
//!
//! Around them: [`cli`] (the command line), [`batch`] and [`signals`] (many inputs,
//! clean stops), [`ui`] (the one printer people read), [`error`] (errors and exit codes).
//!
//! A library caller builds a typed configuration and processes bytes:
//!
//! ```
//! use rivumi_compact::config::{Config, Task};
//! use rivumi_compact::engine::{self, Settings};
//! let input = br#"{"type":"message","id":"m1","turn":"t1","role":"user","content":"hi"}
//! {"type":"message","id":"a1","turn":"t1","role":"assistant","content":"hello","usage":{"input_tokens":90,"output_tokens":5}}
//! "#;
//! let cfg = Config { task: Task { max_total_tokens: Some(100) }, ..Config::default() };
//! let done = engine::process(input, std::path::Path::new("example.jsonl"), &Settings::from_config(&cfg)).unwrap();
//! assert_eq!(done.plan.decision.action.as_str(), "pressure_reminder");
//! assert_eq!(done.plan.decision.used, Some(95));
//! ```

pub mod batch;
pub mod chart;
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
pub mod replay;
pub mod report;
pub mod resume;
pub mod signals;
pub mod source;
pub mod stats;
pub mod text;
pub mod tokens;
pub mod transcript;
pub mod ui;
pub mod validate;

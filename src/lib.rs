//! `rivumi-compact`: Rivumi's two-threshold compaction policy, offline, over agent
//! transcripts. The data flow is the architecture, one module a step:
//!
//! 1. read: [`inputs`] (the files the arguments name) → [`source`] (bytes, read once) →
//!    [`formats`] (importers, detection) → [`transcript`] (the canonical model, a
//!    borrowed view of the bytes);
//! 2. configure: [`config`] (typed layers: defaults < session < file < flags);
//! 3. measure: [`tokens`] (estimates and real tokenizers);
//! 4. re-anchor: [`reanchor`] gathers the facts, [`render`] writes every text the tool
//!    injects (the summary, the reminder, the block);
//! 5. decide: [`policy`] measures and proposes (two denominators, fallback, checkpoint,
//!    lifecycle) a typed plan; it weighs the texts it appends, so it sits above them;
//! 6. apply: [`engine`] runs the user's verdicts ([`hooks`]) once and gives the plan;
//! 7. write: [`output`] (canonical JSONL, chat lines, out-dir, atomic files),
//!    [`resume`] (Claude Code and Codex sessions), [`report`] (what was decided);
//! 8. modes: [`dataset`] runs steps 1–7 per line of a dataset, [`stats`], [`replay`]
//!    (steps 1–3 point by point) and [`chart`], [`check`] (golden cases), [`validate`];
//! 9. edge: [`cli`] parses, calls and prints.
//!
//! Beneath them all, the leaf: [`error`] (errors and exit codes), [`ui`] (the one
//! printer people read), [`text`] (text and JSON string literals), [`scan`] (the
//! validating JSON scanner the canonical reader and the dataset view read with),
//! [`signals`] and [`batch`] (clean stops, many inputs, ordered parallel maps),
//! [`mapped`] (large inputs mapped, and what happens when one shrinks).
//!
//! The layers, from the bottom, are the crates of the workspace (`crates/`); each depends
//! on the one below it only, so the compiler holds the direction, and re-exports the
//! modules of the crates below it, so `crate::` paths read the same in every crate. This
//! crate re-exports them all and adds the edge:
//!
//! | layer | crate | modules |
//! |---|---|---|
//! | leaf | `rivumi-leaf` | error, ui, text, scan, signals, batch, mapped, walk |
//! | model | `rivumi-model` | source, transcript |
//! | formats | `rivumi-formats` | formats, inputs |
//! | configure | `rivumi-config` | config |
//! | measure | `rivumi-tokens` | tokens |
//! | re-anchor | `rivumi-render` | render, reanchor |
//! | decide | `rivumi-policy` | policy |
//! | apply | `rivumi-engine` | hooks, engine |
//! | write | `rivumi-write` | resume, output, report |
//! | modes | `rivumi-modes` | stats, dataset, replay, chart, check, validate |
//! | edge | `rivumi-compact` | cli |
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
//! let done = engine::process(input, std::path::Path::new("example.jsonl"), &Settings::from_config(&cfg).unwrap()).unwrap();
//! assert_eq!(done.plan.decision.action.as_str(), "pressure_reminder");
//! assert_eq!(done.plan.decision.used, Some(95));
//! ```

pub use rivumi_modes::{
    batch, chart, check, config, dataset, engine, error, formats, hooks, inputs, mapped, output, policy, reanchor,
    render, replay, report, resume, run, scan, signals, source, stats, text, tokens, transcript, ui, validate, walk,
};

pub mod cli;

//! `config`: the merged configuration and the layer each value came from.

use super::common::{settings, single_input, stdout_write};
use super::ConfigArgs;
use crate::error::{Exit, Result};
use crate::formats::InputFormat;
use crate::ui;
use serde_json::{json, Map};

pub(super) fn config(args: ConfigArgs) -> Result<Exit> {
    let settings = settings(&args.policy, None, true)?;
    let input = single_input(&args.input, args.policy.input_format)?;
    let canonical = crate::engine::load(&input, settings.input_format)?;
    let t = canonical.transcript(&input.path)?;
    canonical.accounting_of(&t, &input.path)?;
    let layered = settings.config_for(&t, &input.path)?;
    layered.warnings.iter().for_each(|w| ui::warn(w));
    let window_source = window_source(t.session.as_ref(), canonical.format);
    let from = |k: &str, layer: crate::config::Layer| match (&window_source, layer) {
        (Some(src), crate::config::Layer::Session) if k == "runtime.context_window" => format!("session ({src})"),
        _ => layer.to_string(),
    };
    let text = if args.json {
        let obj: Map<_, _> = layered
            .keys()
            .iter()
            .map(|(k, v, layer)| (k.clone(), json!({"value": v, "from": from(k, *layer)})))
            .collect();
        let mut s = serde_json::to_string_pretty(&obj).expect("json");
        s.push('\n');
        s
    } else {
        layered
            .keys()
            .iter()
            .map(|(k, v, layer)| {
                format!("{k:<28} {:<40} {}\n", ui::escape(&v.to_string()), ui::escape(&from(k, *layer)))
            })
            .collect()
    };
    stdout_write(|w| w.write_all(text.as_bytes()))
}

/// Where an imported session's context window comes from: the model it names and the
/// model table's row (its source), or the assumption made for a model the table lacks.
fn window_source(session: Option<&serde_json::Map<String, serde_json::Value>>, format: InputFormat) -> Option<String> {
    if format != InputFormat::ClaudeCode {
        return None;
    }
    let table = crate::formats::models::TABLE;
    let Some(model) = session.and_then(|s| s.get("model")).and_then(|m| m.as_str()) else {
        return Some(format!("no model recorded: {} assumed", crate::formats::models::CLAUDE_CODE_ASSUMED));
    };
    Some(match crate::formats::models::claude_code(model) {
        Some(row) => format!("model {model}, {table}: {}", row.source),
        None => format!("model {model} is not in {table}: {} assumed", crate::formats::models::CLAUDE_CODE_ASSUMED),
    })
}

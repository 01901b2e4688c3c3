//! `config`: the merged configuration and the layer each value came from.

use super::common::{load, settings, single_input, stdout_write};
use super::ConfigArgs;
use crate::error::{Exit, Result};
use crate::ui;
use serde_json::{json, Map};

pub(super) fn config(args: ConfigArgs) -> Result<Exit> {
    let settings = settings(&args.policy, None, true)?;
    let input = single_input(&args.input, args.policy.input_format)?;
    let canonical = load(&input, settings.input_format)?;
    let t = crate::transcript::parse(&canonical.bytes, &input.path)?;
    let layered = settings.config_for(t.session.as_ref(), &input.path)?;
    layered.warnings.iter().for_each(|w| ui::warn(w));
    let text = if args.json {
        let obj: Map<_, _> = layered
            .keys()
            .iter()
            .map(|(k, v, from)| (k.clone(), json!({"value": v, "from": from.to_string()})))
            .collect();
        let mut s = serde_json::to_string_pretty(&obj).expect("json");
        s.push('\n');
        s
    } else {
        layered
            .keys()
            .iter()
            .map(|(k, v, from)| format!("{k:<28} {:<40} {from}\n", ui::escape(&v.to_string())))
            .collect()
    };
    stdout_write(|w| w.write_all(text.as_bytes()))
}

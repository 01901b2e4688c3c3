//! Every closed set is named once: its `as_str`, its serde name, its clap name and its
//! parse are derived, and must agree for every variant (a rename rule changed on one
//! derive and not the others fails here).

use rivumi_compact::config::{EvaluateAt, Profile, RuntimeKind, Tokenizer};
use rivumi_compact::formats::InputFormat;
use rivumi_compact::policy::{Action, Denominator, PressurePath, Trigger};
use rivumi_compact::transcript::{Mark, Role, Synthetic};
use std::str::FromStr;
use strum::VariantArray;

/// The variants of `T` with their names, each parsed back.
fn names<T: VariantArray + FromStr + PartialEq + std::fmt::Debug + Copy>(
    as_str: fn(T) -> &'static str,
) -> Vec<(T, &'static str)> {
    let out: Vec<(T, &str)> = T::VARIANTS.iter().map(|&v| (v, as_str(v))).collect();
    for (v, name) in &out {
        assert_eq!(T::from_str(name).ok(), Some(*v), "{name} does not parse back");
    }
    assert!(!out.is_empty());
    out
}

fn serde_agrees<T: serde::Serialize>(all: &[(T, &str)]) {
    for (v, name) in all {
        assert_eq!(serde_json::to_value(v).unwrap(), serde_json::json!(name));
    }
}

fn deserialize_agrees<T: serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>(all: &[(T, &str)]) {
    for (v, name) in all {
        assert_eq!(&serde_json::from_value::<T>(serde_json::json!(name)).unwrap(), v);
    }
}

fn clap_agrees<T: clap::ValueEnum>(all: &[(T, &str)]) {
    for (v, name) in all {
        assert_eq!(v.to_possible_value().unwrap().get_name(), *name);
    }
}

#[test]
fn every_closed_set_has_one_name_per_variant() {
    let input = names(InputFormat::as_str);
    serde_agrees(&input);
    clap_agrees(&input);
    let runtime = names(RuntimeKind::as_str);
    serde_agrees(&runtime);
    deserialize_agrees(&runtime);
    clap_agrees(&runtime);
    let tokenizer = names(Tokenizer::as_str);
    serde_agrees(&tokenizer);
    deserialize_agrees(&tokenizer);
    clap_agrees(&tokenizer);
    let profile = names(Profile::as_str);
    serde_agrees(&profile);
    clap_agrees(&profile);
    let at = names(EvaluateAt::as_str);
    serde_agrees(&at);
    deserialize_agrees(&at);
    serde_agrees(&names(Action::as_str));
    serde_agrees(&names(PressurePath::as_str));
    serde_agrees(&names(Denominator::as_str));
    serde_agrees(&names(Trigger::as_str));
    deserialize_agrees(&names(Role::as_str));
    // The injected kinds are written in records and read back as marks.
    for (kind, name) in names(Synthetic::as_str) {
        assert_eq!(Mark::of(name.into()), Mark::Known(kind));
    }
    assert_eq!(Mark::of("from_a_later_version".into()).as_str(), "from_a_later_version");
    // The names the SPEC and the outputs use, spot-checked against the rule.
    assert_eq!(PressurePath::AgentRunner.as_str(), "agent-runner");
    assert_eq!(Action::NativeCompactionRequested.as_str(), "native_compaction_requested");
    assert_eq!(Synthetic::HistorySummaryFallback.as_str(), "history_summary_fallback");
    assert_eq!(InputFormat::SweAgent.as_str(), "swe-agent");
    assert_eq!(Tokenizer::O200k.as_str(), "o200k");
}

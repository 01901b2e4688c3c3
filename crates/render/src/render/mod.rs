//! The texts the tool injects and prints: pure functions of data, no I/O.

mod reanchor;
mod summary;

pub use reanchor::{render_reanchor, ReanchorFacts};
pub use summary::{build_from, build_history_summary_fallback_message, SummaryEntry, SUMMARY_HEADER};

/// The ratio `used / limit` rounded half-up to 4 decimals, computed in integers.
pub fn ratio(used: u64, limit: u64) -> f64 {
    let bp = (u128::from(used) * 20_000 + u128::from(limit)) / (2 * u128::from(limit));
    bp as f64 / 10_000.0
}

/// The pressure reminder (SPEC 4): used, limit and ratio, and the ask to finish.
pub fn pressure_reminder(used: u64, limit: u64) -> String {
    format!(
        "[rivumi] Token budget pressure: this task has used {used} of its {limit} max_total_tokens \
         (ratio {:.4}). Finish within the budget: complete the current step with the smallest change \
         that works, avoid re-reading large files or repeating work, run the verification once, and stop.",
        ratio(used, limit)
    )
}

#[cfg(test)]
mod tests {
    #[test]
    #[allow(clippy::float_cmp)] // exact values: the ratio is computed in integers
    fn ratios_round_half_up_to_four_decimals() {
        for (used, limit, want) in [
            (17_000, 20_000, 0.85),
            (1, 3, 0.3333),
            (2, 3, 0.6667),
            (1, 20_000, 0.0001), // 0.00005: half a basis point rounds up
            (1, 20_001, 0.0),    // just under half
            (1, 40_000, 0.0),
            (u64::MAX, 1, u64::MAX as f64),
            (0, 5, 0.0),
        ] {
            assert_eq!(super::ratio(used, limit), want, "{used}/{limit}");
        }
    }
}

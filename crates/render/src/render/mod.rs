//! The texts the tool injects and prints: pure functions of data, no I/O.

mod reanchor;
mod summary;

pub use reanchor::{render_reanchor, ReanchorFacts};
pub use summary::{build_from, build_history_summary_fallback_message, SummaryEntry, SUMMARY_HEADER};

/// The ratio `used / limit` rounded half-up to 4 decimals, computed in integers.
pub fn ratio(used: u64, limit: u64) -> f64 {
    basis_points(used, limit) as f64 / 10_000.0
}

/// `used / limit` in ten-thousandths, rounded half-up.
fn basis_points(used: u64, limit: u64) -> u128 {
    (u128::from(used) * 20_000 + u128::from(limit)) / (2 * u128::from(limit))
}

/// [`ratio`] written with its 4 decimals (`{:.4}` of it), from the integers: a
/// float's exact formatting is the dearest part of the texts every compacted dataset
/// row gets. From 2^40 basis points on, the float nearest the ratio can round to
/// another fourth decimal, so the float is written there, as it always was.
pub struct RatioText(pub u64, pub u64);

impl std::fmt::Display for RatioText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let bp = basis_points(self.0, self.1);
        if bp < 1 << 40 {
            write!(f, "{}.{:04}", bp / 10_000, bp % 10_000)
        } else {
            write!(f, "{:.4}", ratio(self.0, self.1))
        }
    }
}

/// The pressure reminder (SPEC 4): used, limit and ratio, and the ask to finish.
pub fn pressure_reminder(used: u64, limit: u64) -> String {
    format!(
        "[rivumi] Token budget pressure: this task has used {used} of its {limit} max_total_tokens \
         (ratio {}). Finish within the budget: complete the current step with the smallest change \
         that works, avoid re-reading large files or repeating work, run the verification once, and stop.",
        RatioText(used, limit)
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

    proptest::proptest! {
        /// The text written from the integers is the float's `{:.4}`, wherever the
        /// figures are (small budgets, huge sums, the switch at 2^40 basis points).
        #[test]
        fn the_ratio_text_is_the_floats(
            used in proptest::prop_oneof![0u64..1_000_000, 0u64..=u64::MAX, (1u64 << 26)..(1u64 << 38)],
            limit in proptest::prop_oneof![1u64..100_000, 1u64..=u64::MAX, 1u64..4],
        ) {
            proptest::prop_assert_eq!(
                super::RatioText(used, limit).to_string(),
                format!("{:.4}", super::ratio(used, limit))
            );
        }
    }

    #[test]
    fn the_ratio_text_at_its_edges() {
        for (used, limit) in
            [(0, 1), (1, 3), (17_000, 20_000), ((1 << 40) / 10_000, 1), (u64::MAX, 1), (u64::MAX, u64::MAX)]
        {
            assert_eq!(super::RatioText(used, limit).to_string(), format!("{:.4}", super::ratio(used, limit)));
        }
    }
}

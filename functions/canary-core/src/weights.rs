//! Weight arithmetic. A rollout step names the canary's share in percent; both ALB forward
//! actions (0–999 per target group) and Route 53 weighted records (0–255 per record) take
//! relative weights, so a step is written as `stable = 100 - canary`, `canary = percent`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The relative weights of the two sides of one traffic target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WeightPair {
    /// Weight of the old (stable) cluster's target group or record.
    pub stable: u16,
    /// Weight of the new (canary) cluster's target group or record.
    pub canary: u16,
}

impl WeightPair {
    /// The weights that give the canary `percent` % of the traffic.
    /// Never both zero: at 0 % the stable side keeps weight 100 (Route 53 splits evenly
    /// between records that are all 0, so "both zero" would send the canary half).
    pub fn for_canary_percent(percent: u8) -> Option<Self> {
        (percent <= 100).then(|| WeightPair {
            stable: u16::from(100 - percent),
            canary: u16::from(percent),
        })
    }

    /// The canary's share of the traffic in percent. Both zero means an even split, which
    /// is what Route 53 does with all-zero weighted records.
    pub fn canary_share_percent(self) -> f64 {
        let total = f64::from(self.stable) + f64::from(self.canary);
        if total == 0.0 {
            50.0
        } else {
            f64::from(self.canary) * 100.0 / total
        }
    }

    pub fn both_zero(self) -> bool {
        self.stable == 0 && self.canary == 0
    }
}

impl std::fmt::Display for WeightPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "stable {} / canary {}", self.stable, self.canary)
    }
}

/// The weights of one traffic target, named by its key (see `TrafficTarget::key`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TargetWeights {
    pub target: String,
    pub stable: u16,
    pub canary: u16,
}

impl TargetWeights {
    pub fn new(target: impl Into<String>, pair: WeightPair) -> Self {
        TargetWeights {
            target: target.into(),
            stable: pair.stable,
            canary: pair.canary,
        }
    }

    pub fn pair(&self) -> WeightPair {
        WeightPair {
            stable: self.stable,
            canary: self.canary,
        }
    }
}

/// What a compare-and-set finds before it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CasCheck {
    /// The weights are what this rollout last set: write.
    AsExpected,
    /// The weights already are the desired ones (a retried invocation): nothing to write.
    AlreadyDesired,
    /// Someone else changed them: do not write.
    ChangedExternally,
}

pub fn compare_and_set_check(
    current: WeightPair,
    expected: WeightPair,
    desired: WeightPair,
) -> CasCheck {
    if current == desired {
        CasCheck::AlreadyDesired
    } else if current == expected {
        CasCheck::AsExpected
    } else {
        CasCheck::ChangedExternally
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn a_step_sums_to_100_and_gives_the_canary_its_percent(p in 0u8..=100) {
            let pair = WeightPair::for_canary_percent(p).unwrap();
            prop_assert_eq!(pair.stable + pair.canary, 100);
            prop_assert_eq!(pair.canary, u16::from(p));
            prop_assert!(!pair.both_zero());
            prop_assert!((pair.canary_share_percent() - f64::from(p)).abs() < 1e-9);
        }

        #[test]
        fn percent_over_100_has_no_weights(p in 101u8..=255) {
            prop_assert_eq!(WeightPair::for_canary_percent(p), None);
        }

        #[test]
        fn more_percent_never_means_less_canary_share(a in 0u8..=100, b in 0u8..=100) {
            let (lo, hi) = (a.min(b), a.max(b));
            let share = |p| WeightPair::for_canary_percent(p).unwrap().canary_share_percent();
            prop_assert!(share(lo) <= share(hi));
        }

        #[test]
        fn share_is_within_bounds(stable in 0u16..=999, canary in 0u16..=999) {
            let share = WeightPair { stable, canary }.canary_share_percent();
            prop_assert!((0.0..=100.0).contains(&share));
        }

        #[test]
        fn cas_writes_only_from_the_expected_state(
            cs in 0u16..=5, cc in 0u16..=5, es in 0u16..=5, ec in 0u16..=5, ds in 0u16..=5, dc in 0u16..=5,
        ) {
            let (current, expected, desired) = (
                WeightPair { stable: cs, canary: cc },
                WeightPair { stable: es, canary: ec },
                WeightPair { stable: ds, canary: dc },
            );
            let check = compare_and_set_check(current, expected, desired);
            match check {
                CasCheck::AlreadyDesired => prop_assert_eq!(current, desired),
                CasCheck::AsExpected => prop_assert!(current == expected && current != desired),
                CasCheck::ChangedExternally => prop_assert!(current != expected && current != desired),
            }
        }
    }

    #[test]
    fn all_zero_is_an_even_split() {
        assert_eq!(
            WeightPair {
                stable: 0,
                canary: 0
            }
            .canary_share_percent(),
            50.0
        );
    }
}

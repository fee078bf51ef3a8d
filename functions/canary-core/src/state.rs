//! The execution state's shape, as far as code outside the state machine reads it: the
//! safety net and the operator CLI read what the `PrepareTraffic` and `SetWeights` states
//! left (`$.prepared`, `$.lastSet`, `$.outcome`) from the execution history, and judge an
//! ended execution by the state it entered last, or the end its outcome already decided.
//! `statemachine/rollout.asl.json` writes these paths; a test
//! checks the definition still has them (tests/tests/state_machine_definition.rs), and
//! `schema/contract.json` hands the names to the Python sandbox and tests.

use serde::{Deserialize, Serialize};

use crate::weights::TargetWeights;

/// The state that reads the baseline (`$.prepared`).
pub const PREPARE_STATE: &str = "PrepareTraffic";
/// The state that sets a step's weights (`$.lastSet`).
pub const SET_STATE: &str = "SetWeights";
/// The state that steps a gradual rollback back (`rollback.gradual`), writing `$.lastSet` too.
pub const STEP_BACK_STATE: &str = "StepBack";
/// Every state whose output's `$.lastSet` is what the rollout last set.
pub const LAST_SET_STATES: [&str; 2] = [SET_STATE, STEP_BACK_STATE];
/// The states a bake's or an approval wait's alarm watch ends in when it could not be
/// registered: instant rollback is off there, the polling checks alone judge the canary.
pub const WATCH_UNAVAILABLE_STATES: [&str; 2] =
    ["AlarmWatchUnavailable", "AlarmWatchUnavailableWhileWaiting"];
/// JSON pointers, into a state's output, of the weights the safety net restores and compares.
pub const BASELINE_POINTER: &str = "/prepared/baseline";
pub const LAST_SET_POINTER: &str = "/lastSet/weights";

/// `$.prepared`: what Prepare found (`PrepareTraffic`'s `ResultSelector`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prepared {
    /// The weights a rollback restores, one per traffic target, in plan order.
    pub baseline: Vec<TargetWeights>,
    /// The steps the rollout runs (only their weights are read here).
    #[serde(default)]
    pub steps: Vec<PreparedStep>,
}

/// A step of `$.prepared.steps`, as far as it is read outside the state machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreparedStep {
    pub weight: u8,
}

/// `$.lastSet`: the weights the rollout last set and read back (`SetWeights`, `StepBack`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastSet {
    pub weights: Vec<TargetWeights>,
}

/// `$.outcome`: how an execution that did not roll back ends, written by its `<End>Outcome`
/// state before the lifecycle event and the Fail state of that name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    #[serde(rename = "End")]
    pub end: String,
}

/// The parts of an execution's state read outside the state machine; each absent until the
/// state that writes it has run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionState {
    #[serde(default)]
    pub prepared: Option<Prepared>,
    #[serde(default)]
    pub last_set: Option<LastSet>,
    #[serde(default)]
    pub outcome: Option<Outcome>,
}

impl ExecutionState {
    /// A state's input or output as the history gives it (JSON text); `None` when it is not
    /// JSON or its `prepared`/`lastSet` do not have their shape.
    pub fn parse(text: &str) -> Option<Self> {
        serde_json::from_str(text).ok()
    }
}

/// Terminal states that leave traffic where it should be, and why. An execution that entered
/// one of them last and failed with the state's own error (not a `States.*` platform error
/// raised while running it) needs nothing from the safety net.
pub const SETTLED_ENDS: [(&str, &str); 10] = [
    ("FailedBeforeTraffic", "it failed before any traffic moved"),
    (
        "FrozenTooLong",
        "a change freeze held it past its bound before any traffic moved",
    ),
    (
        "ClusterFailed",
        "the new cluster failed before any traffic moved",
    ),
    (
        "ClusterNotActive",
        "the new cluster never became ACTIVE; no traffic moved",
    ),
    (
        "AppsNotReady",
        "the apps never became ready; no traffic moved",
    ),
    (
        "RetireFailed",
        "it was promoted; only retiring the old cluster failed, and traffic stays on the new cluster",
    ),
    (
        "TargetsNotHealthy",
        "the new cluster's targets never became healthy; no traffic moved",
    ),
    (
        "ClusterNotHealthy",
        "EKS never said the new cluster was ready (its insights or add-ons); no traffic moved",
    ),
    (
        "RolledBack",
        "its own Restore put traffic back to the baseline",
    ),
    ("Promoted", "it promoted the new cluster"),
];

/// Terminal states of a rollout a foreign change stopped, and why. The targets someone else
/// changed are theirs, left as found; its `RestoreUnchanged` state puts every other target
/// back to the baseline (compare-and-set against what it last set), and the safety net does
/// the same again, since that state's failure does not change the end.
pub const FOREIGN_ENDS: [(&str, &str); 2] = [
    (
        "StoppedByForeignChange",
        "someone else changed the weights before a step or under a check",
    ),
    (
        "ChangedBeforePromotion",
        "someone else changed the weights during the last bake",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_is_read_where_it_is_and_leniently_elsewhere() {
        let state = ExecutionState::parse(
            r#"{"plan": {}, "prepared": {"baseline": [{"target": "L", "stable": 100, "canary": 0}],
                "steps": [{"weight": 10, "bakeSeconds": 60}]}, "lastSet": {"weights": []}}"#,
        )
        .expect("a state");
        let prepared = state.prepared.expect("prepared");
        assert_eq!(prepared.baseline[0].target, "L");
        assert_eq!(prepared.steps, [PreparedStep { weight: 10 }]);
        assert_eq!(state.last_set.expect("lastSet").weights, []);
        assert_eq!(ExecutionState::parse("{}"), Some(ExecutionState::default()));
        assert_eq!(ExecutionState::parse("not json"), None);
    }
}

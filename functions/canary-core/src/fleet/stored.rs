//! A fleet plan too large for the fleet execution's state: stored in S3 (the stack's
//! `FleetPlanBucket`, by `cluster-canary fleet start`), and given to the fleet execution by
//! reference, `{"storedPlan": {"bucket", "key", "sha256"}}`. The fleet's state then carries the
//! reference and the few fields the state machine itself reads ([`SUMMARY_FIELDS`]: its name
//! for the events, its soak, `rollbackPromotedOnHalt`), and each step of the fleet reads the
//! plan again (docs/architecture.md, "Fleets at scale"): 1,000 cells of 400 bytes each fit.
//!
//! The object's SHA-256 is part of the reference (and of its key): a plan replaced or edited in
//! the bucket while its fleet runs is refused, never read as if the fleet had been started with
//! it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::{one_error, FleetPlan, ValidFleet, MAX_FLEET_PLAN_BYTES};
use crate::validate::PlanErrors;

/// A stored fleet plan's size as compact JSON. Each fleet step reads and validates the whole
/// plan: 4 MiB is 1,000 cells of 4 KiB each, read in well under a second by a 128 MB function.
pub const MAX_STORED_FLEET_PLAN_BYTES: usize = 4 * 1024 * 1024;
/// The field of a fleet execution's input that makes it a reference to a stored plan.
pub const STORED_PLAN_FIELD: &str = "storedPlan";
/// Where `cluster-canary fleet start` stores plans in the bucket.
pub const STORED_PLAN_PREFIX: &str = "fleet-plans/";
/// The plan's fields statemachine/fleet.asl.json reads from `$.fleet`: beside a reference, the
/// fleet's state carries them as the stored plan has them.
pub const SUMMARY_FIELDS: [&str; 3] = ["name", "soak", "rollbackPromotedOnHalt"];

/// Where a fleet's plan is stored, and what it must hash to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StoredPlan {
    /// The S3 bucket (the stack's `FleetPlanBucket`).
    pub bucket: String,
    /// The object's key, e.g. `fleet-plans/web-eks-1-34/<sha256>.json`.
    pub key: String,
    /// The SHA-256 of the object's bytes, 64 lowercase hex digits.
    pub sha256: String,
}

/// The input of a fleet execution whose plan is stored.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StoredPlanInput {
    stored_plan: StoredPlan,
}

impl StoredPlan {
    /// The reference to `bytes` (a fleet plan as compact JSON) stored in `bucket`, under a key
    /// of its fleet's name and its digest: the same plan always has the same key.
    pub fn of(bucket: &str, fleet_name: &str, bytes: &[u8]) -> StoredPlan {
        let sha256 = hex_digest(bytes);
        StoredPlan {
            bucket: bucket.to_owned(),
            key: format!("{STORED_PLAN_PREFIX}{fleet_name}/{sha256}.json"),
            sha256,
        }
    }

    /// The reference a fleet execution's input holds, if it holds one. `Err` for an input that
    /// names `storedPlan` but is not exactly a valid reference.
    ///
    /// Beside the reference, the input may hold [`SUMMARY_FIELDS`] (checked against the plan by
    /// [`StoredPlan::check_summary`]).
    pub fn from_input(input: &Value) -> Option<Result<StoredPlan, PlanErrors>> {
        input.get(STORED_PLAN_FIELD)?;
        let mut reference = input.clone();
        if let Some(fields) = reference.as_object_mut() {
            fields.retain(|key, _| !SUMMARY_FIELDS.contains(&key.as_str()));
        }
        let input: StoredPlanInput = match serde_path_to_error::deserialize(reference) {
            Ok(input) => input,
            Err(e) => {
                let path = e.path().to_string();
                return Some(Err(one_error(
                    if path == "." { "fleet" } else { &path },
                    format!(
                        "{} (a fleet started from a stored plan has `storedPlan`: {{\"bucket\", \"key\", \"sha256\"}}, and \
                         none of the plan's fields but {})",
                        e.into_inner(),
                        SUMMARY_FIELDS.join(", ")
                    ),
                )));
            }
        };
        let stored = input.stored_plan;
        let problem = if stored.bucket.is_empty() || stored.key.is_empty() {
            Some("needs a bucket and a key")
        } else if stored.sha256.len() != 64
            || !stored
                .sha256
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            Some("`sha256` must be 64 lowercase hex digits (the SHA-256 of the stored object)")
        } else {
            None
        };
        Some(match problem {
            Some(problem) => Err(one_error(STORED_PLAN_FIELD, problem.to_owned())),
            None => Ok(stored),
        })
    }

    /// What the fleet's state carries for the stored `fleet`: the reference and the plan's
    /// [`SUMMARY_FIELDS`] it has.
    pub fn in_state(&self, fleet: &FleetPlan) -> Value {
        let mut state = summary(fleet);
        state.insert(STORED_PLAN_FIELD.to_owned(), serde_json::json!(self));
        Value::Object(state)
    }

    /// Each [`SUMMARY_FIELDS`] the input gives is the stored plan's: the state machine reads
    /// them there, fleet-waves in the plan.
    pub fn check_summary(input: &Value, fleet: &FleetPlan) -> Result<(), PlanErrors> {
        let summary = summary(fleet);
        for field in SUMMARY_FIELDS {
            if let Some(given) = input.get(field) {
                if summary.get(field) != Some(given) {
                    return Err(one_error(
                        field,
                        format!(
                            "is {given} beside `storedPlan`, but the stored plan's is {}",
                            summary.get(field).unwrap_or(&Value::Null)
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// `s3://bucket/key`.
    pub fn uri(&self) -> String {
        format!("s3://{}/{}", self.bucket, self.key)
    }

    /// The stored object's bytes as the fleet plan, if they are the ones this reference names.
    pub fn parse(&self, bytes: &[u8]) -> Result<ValidFleet, PlanErrors> {
        let digest = hex_digest(bytes);
        if digest != self.sha256 {
            return Err(one_error(
                STORED_PLAN_FIELD,
                format!(
                    "the object at {} is not the plan this fleet was started with (its SHA-256 is {digest}, \
                     the fleet's is {}): a stored fleet plan must not change while its fleet runs",
                    self.uri(),
                    self.sha256
                ),
            ));
        }
        let value: Value = serde_json::from_slice(bytes).map_err(|e| {
            one_error(
                STORED_PLAN_FIELD,
                format!("the object at {} is not JSON: {e}", self.uri()),
            )
        })?;
        FleetPlan::parse_storable(value)
    }
}

/// The plan's [`SUMMARY_FIELDS`] it has.
fn summary(fleet: &FleetPlan) -> Map<String, Value> {
    let mut fields = match serde_json::to_value(fleet) {
        Ok(Value::Object(fields)) => fields,
        _ => Map::new(),
    };
    fields.retain(|key, _| SUMMARY_FIELDS.contains(&key.as_str()));
    fields
}

/// Whether a plan of `size` compact bytes must be stored to be run (too large for the state).
pub fn must_be_stored(size: usize) -> bool {
    size > MAX_FLEET_PLAN_BYTES
}

fn hex_digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

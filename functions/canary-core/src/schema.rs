//! The JSON Schema of the rollout plan, generated from the Rust types. The checked-in copy at
//! `schema/rollout-plan.schema.json` is kept equal to this by a test; regenerate it with
//! `UPDATE_SCHEMA=1 cargo test -p canary-core --test schema`.

use crate::plan::RolloutPlan;

pub fn rollout_plan_schema() -> serde_json::Value {
    let mut schema = schemars::schema_for!(RolloutPlan).to_value();
    if let Some(object) = schema.as_object_mut() {
        object.insert(
            "$id".to_owned(),
            "https://cluster-canary.dev/schema/rollout-plan.schema.json".into(),
        );
    }
    schema
}

//! Keeps `schema/rollout-plan.schema.json` equal to the schema generated from the Rust types,
//! and every example plan valid.

use std::path::PathBuf;

use canary_core::schema::{contract, errors_page, fleet_plan_schema, rollout_plan_schema};
use canary_core::RolloutPlan;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The checked-in file at `path` is `generated` (written instead with `UPDATE_SCHEMA=1`).
fn assert_current(path: &str, generated: &str) {
    let path = repo_root().join(path);
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        std::fs::write(&path, generated).expect("write the generated file");
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "{} is out of date; regenerate it with `UPDATE_SCHEMA=1 cargo test -p canary-core --test schema`",
        path.display()
    );
}

fn pretty(value: &serde_json::Value) -> String {
    serde_json::to_string_pretty(value).expect("JSON serializes") + "\n"
}

#[test]
fn checked_in_schema_matches_the_rust_types() {
    assert_current(
        "schema/rollout-plan.schema.json",
        &pretty(&rollout_plan_schema()),
    );
}

#[test]
fn checked_in_fleet_schema_matches_the_rust_types() {
    assert_current(
        "schema/fleet-plan.schema.json",
        &pretty(&fleet_plan_schema()),
    );
}

#[test]
fn checked_in_contract_matches_the_rust_constants() {
    assert_current("schema/contract.json", &pretty(&contract()));
}

#[test]
fn the_errors_page_is_current() {
    assert_current("docs/errors.md", &errors_page());
}

#[test]
fn every_example_plan_is_valid() {
    let dir = repo_root().join("examples/plans");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).expect("examples/plans exists") {
        let path = entry.expect("dir entry").path();
        let text = std::fs::read_to_string(&path).expect("read example");
        let value: serde_json::Value = serde_json::from_str(&text).expect("example is JSON");
        if let Err(e) = RolloutPlan::parse(value) {
            panic!("{}: {e}", path.display());
        }
        count += 1;
    }
    assert!(
        count >= 3,
        "expected the example plans in {}",
        dir.display()
    );
}

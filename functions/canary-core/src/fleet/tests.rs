use serde_json::{json, Value};

use super::*;

fn example() -> Value {
    serde_json::from_str(include_str!("../../../../examples/fleets/web-fleet.json"))
        .expect("the example fleet is JSON")
}

fn names(fleet: &ValidFleet, wave: usize) -> Vec<&str> {
    fleet.waves[wave]
        .cells
        .iter()
        .map(|&i| fleet.fleet.cells[i].name.as_str())
        .collect()
}

fn problems(value: Value) -> Vec<String> {
    FleetPlan::parse(value)
        .expect_err("the fleet plan is refused")
        .0
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn the_example_fleet_resolves_into_waves_spread_across_regions() {
    let fleet = FleetPlan::parse(example()).expect("the example is valid");
    assert_eq!(fleet.plans.len(), 6);
    assert_eq!(names(&fleet, 0), ["use1-a"]);
    // 50 % of 6 is 3 moved by the end of wave 2: the next two, one per region.
    assert_eq!(names(&fleet, 1), ["euw1-a", "use1-b"]);
    assert_eq!(names(&fleet, 2), ["euw1-b", "use1-c", "euw1-c"]);
    assert_eq!(fleet.waves[1].max_concurrent_cells, 2);
    assert_eq!(
        fleet.waves[2].max_concurrent_cells,
        DEFAULT_CONCURRENT_CELLS
    );
    // The template's fields, the cell's over them.
    let plan = &fleet.plans[3].plan;
    assert_eq!(plan.cluster.name, "web-euw1-a-v134");
    assert_eq!(plan.steps.len(), 3);
}

#[test]
fn listed_order_and_explicit_waves() {
    let mut value = example();
    value["order"] = json!("listed");
    value["waves"] = json!([{"cells": ["euw1-c"]}, {"size": 3}, {"size": "100%"}]);
    let fleet = FleetPlan::parse(value).expect("valid");
    assert_eq!(names(&fleet, 0), ["euw1-c"]);
    assert_eq!(names(&fleet, 1), ["use1-a", "use1-b"]);
    assert_eq!(names(&fleet, 2), ["use1-c", "euw1-a", "euw1-b"]);
}

#[test]
fn a_cell_may_carry_its_whole_plan() {
    let mut value = example();
    let whole = FleetPlan::parse(example()).expect("valid").plans[0]
        .plan
        .clone();
    value["cells"][0] = json!({"name": "use1-a", "plan": whole});
    FleetPlan::parse(value).expect("a whole plan is a cell too");
}

type Mutation = fn(&mut Value);

#[test]
fn bad_fleets_are_refused_with_the_path_of_each_problem() {
    let cases: Vec<(&str, Mutation, &str, &str)> = vec![
        (
            "a cell named twice",
            |v| v["cells"][1]["name"] = json!("use1-a"),
            "cells[1].name",
            "already the name of cells[0]",
        ),
        (
            "a wave naming an unknown cell",
            |v| v["waves"][0] = json!({"cells": ["use1-z"]}),
            "waves[0].cells[0]",
            "`use1-z` is not one of the fleet's cells",
        ),
        (
            "two cells on the same traffic target",
            |v| {
                v["cells"][1]["values"]["trafficTargets"] =
                    v["cells"][0]["values"]["trafficTargets"].clone()
            },
            "cells[1]",
            "shifts the same traffic as cell `use1-a`",
        ),
        (
            "two cells bringing in the same cluster",
            |v| v["cells"][1]["values"]["cluster"] = v["cells"][0]["values"]["cluster"].clone(),
            "cells[1]",
            "brings in cluster web-use1-a-v134 (us-east-1), as cell `use1-a` does",
        ),
        (
            "a budget larger than the fleet",
            |v| v["failureBudget"] = json!(7),
            "failureBudget",
            "the fleet has 6 cells",
        ),
        (
            "a budget of every cell",
            |v| v["failureBudget"] = json!(6),
            "failureBudget",
            "is 6 but the fleet has 6 cells: at most 5 (with a budget of every cell",
        ),
        (
            "a budget given as a share",
            |v| v["failureBudget"] = json!("50%"),
            "failureBudget",
            "must be a whole number of cells (0 up to one fewer than the fleet's cells), got \"50%\"",
        ),
        (
            "a cell in two waves",
            |v| {
                v["waves"] = json!([{"cells": ["use1-a"]}, {"cells": ["use1-a"]}, {"size": "100%"}])
            },
            "waves[1].cells[0]",
            "already in waves[0]",
        ),
        (
            "cells no wave takes",
            |v| v["waves"] = json!([{"size": 1}, {"size": 4}]),
            "waves",
            "leave out cells `euw1-c`, `use1-c`",
        ),
        (
            "sizes that do not grow",
            |v| v["waves"] = json!([{"size": 3}, {"size": "50%"}, {"size": "100%"}]),
            "waves[1].size",
            "must grow",
        ),
        (
            "a share that is not one",
            |v| v["waves"][1]["size"] = json!("half"),
            "waves[1].size",
            "not a share",
        ),
        (
            "a wave with both cells and a size",
            |v| v["waves"][0]["cells"] = json!(["use1-a"]),
            "waves[0]",
            "exactly one of `cells`",
        ),
        (
            "too many at once",
            |v| v["waves"][1]["maxConcurrentCells"] = json!(101),
            "waves[1].maxConcurrentCells",
            "from 1 to 100",
        ),
        (
            "an invalid cell plan, by its path in the cell",
            |v| v["cells"][2]["values"]["steps"] = json!([{"weight": 50}, {"weight": 10}]),
            "cells[2].values.steps[1].weight",
            "",
        ),
        (
            "a cell's null that removes a field the plan needs",
            |v| v["cells"][1]["values"]["steps"] = json!(null),
            "cells[1].values",
            "missing field `steps`: the cell's `null` removed the template's `steps`",
        ),
        (
            "a cell's null that removes a nested field the plan needs",
            |v| v["cells"][1]["values"]["cluster"] = json!({"name": null}),
            "cells[1].values.cluster",
            "the cell's `null` removed the template's `name`",
        ),
        (
            "a cell with neither plan nor values",
            |v| v["cells"][2] = json!({"name": "use1-c"}),
            "cells[2]",
            "exactly one of `plan`",
        ),
        (
            "values without a template",
            |v| {
                v.as_object_mut().map(|o| o.remove("template"));
            },
            "cells[0].values",
            "needs the fleet's `template`",
        ),
        (
            "a cell name that cannot name an execution",
            |v| v["cells"][0]["name"] = json!("US_East"),
            "cells[0].name",
            "not a cell name",
        ),
        (
            "an approval before a wave the fleet lacks",
            |v| v["approval"] = json!({"beforeWaves": [2, 4]}),
            "approval.beforeWaves[1]",
            "the fleet has waves 1 to 3, not 4",
        ),
        (
            "an approval that waits too long",
            |v| v["approval"] = json!({"beforeWaves": [2], "timeoutSeconds": 90000}),
            "approval.timeoutSeconds",
            "from 60 to 86400",
        ),
        (
            "rolling back promoted cells that retire their old cluster",
            |v| {
                v["rollbackPromotedOnHalt"] = json!(true);
                v["cells"][1]["values"]["retire"] = json!({"detachStableTargetGroups": true});
            },
            "rollbackPromotedOnHalt",
            "cells `use1-b` retire their old cluster",
        ),
        (
            "an unknown field",
            |v| v["onHalt"] = json!("panic"),
            "onHalt",
            "unknown variant",
        ),
    ];
    for (what, mutate, path, message) in cases {
        let mut value = example();
        mutate(&mut value);
        let found = problems(value);
        assert!(
            found
                .iter()
                .any(|p| p.starts_with(&format!("{path}: ")) && p.contains(message)),
            "{what}: expected `{path}: …{message}…`, got {found:#?}"
        );
    }
}

#[test]
fn a_fleet_without_cells_says_so_alone() {
    let mut value = example();
    value["cells"] = json!([]);
    let found = problems(value);
    assert_eq!(found, ["cells: at least one cell is required"], "{found:?}");
}

#[test]
fn a_fleet_over_its_size_cap_is_refused_before_anything_else() {
    let mut value = example();
    value["template"]["padding"] = json!("x".repeat(MAX_FLEET_PLAN_BYTES));
    let found = problems(value);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("fleet: is "), "{found:?}");
    // At the cap exactly it is read (and here refused for the unknown field only).
    let mut value = example();
    let size = serde_json::to_vec(&value).expect("json").len();
    value["template"]["padding"] = json!("");
    let filler = MAX_FLEET_PLAN_BYTES - size - r#","padding":"""#.len();
    value["template"]["padding"] = json!("x".repeat(filler));
    assert_eq!(
        serde_json::to_vec(&value).expect("json").len(),
        MAX_FLEET_PLAN_BYTES
    );
    let found = problems(value);
    assert!(found.iter().all(|p| !p.starts_with("fleet:")), "{found:?}");
}

#[test]
fn cell_names() {
    assert!(is_cell_name("use1-a"));
    assert!(is_cell_name(&"a".repeat(MAX_CELL_NAME)));
    for bad in ["", "-a", "a-", "A", "a_b", &"a".repeat(MAX_CELL_NAME + 1)] {
        assert!(!is_cell_name(bad), "{bad}");
    }
}

#[test]
fn the_fleet_state_at_its_caps_stays_under_step_functions_256_kib() {
    // The plan at its cap, the tally at its cap, and one wave of every cell with the longest
    // names: its cell list and its results, as the fleet's state holds them after RunWave.
    let plan = "x".repeat(MAX_FLEET_PLAN_BYTES);
    let tally = "t".repeat(MAX_TALLY_BYTES);
    let name = "c".repeat(MAX_CELL_NAME);
    let cells: Vec<Value> = (0..MAX_FLEET_CELLS)
        .map(|_| json!({"cell": name}))
        .collect();
    let results: Vec<Value> = (0..MAX_FLEET_CELLS)
        .map(|_| json!({"cell": name, "status": "notPromoted"}))
        .collect();
    let result_bytes = serde_json::to_vec(&results[0]).expect("json").len() + 1;
    assert!(result_bytes <= MAX_CELL_RESULT_BYTES, "{result_bytes}");
    let state = json!({
        "fleet": plan,
        "tally": tally,
        "next": {"wave": {"number": MAX_WAVES, "cells": cells, "maxConcurrency": MAX_CONCURRENT_CELLS,
                          "approvalTimeoutSeconds": MAX_APPROVAL_SECONDS, "startedAt": 1.8e9}},
        "results": results,
    });
    let size = serde_json::to_vec(&state).expect("json").len();
    assert!(
        size < 256 * 1024 - 16 * 1024,
        "{size} bytes: less than 16 KiB to spare"
    );
}

#[test]
fn a_cell_gives_only_what_differs_merged_over_the_template() {
    let mut value = example();
    value["template"]["cluster"] = json!({"name": "placeholder", "region": "eu-west-1",
                                          "roleArn": "arn:aws:iam::123456789012:role/cc-cell"});
    value["template"]["rollback"] = json!({"allowCanaryInBaseline": true});
    // Only the name: the template's region and role stay; `null` drops a template field.
    value["cells"][3]["values"]["cluster"] = json!({"name": "web-euw1-a-v134"});
    value["cells"][3]["values"]["rollback"] = Value::Null;
    let fleet = FleetPlan::parse(value).expect("valid");
    let cluster = &fleet.plans[3].plan.cluster;
    assert_eq!(cluster.name, "web-euw1-a-v134");
    assert_eq!(cluster.region, "eu-west-1");
    assert_eq!(
        cluster.role_arn.as_deref(),
        Some("arn:aws:iam::123456789012:role/cc-cell")
    );
    assert!(fleet.plans[3].plan.rollback.is_none());
    assert!(fleet.plans[0].plan.rollback.is_some());
    // Arrays replace: the cell's steps are its own, not an element-wise mix.
    let mut value = example();
    value["cells"][0]["values"]["steps"] = json!([{"weight": 100}]);
    let fleet = FleetPlan::parse(value).expect("valid");
    assert_eq!(fleet.plans[0].plan.steps.len(), 1);
    assert_eq!(fleet.plans[1].plan.steps.len(), 3);
}

/// A fleet of `count` cells, each with its own cluster, ALB listener and target groups (three
/// ARNs: about 400 bytes a cell, the most a cell usually gives) in two regions.
fn alb_fleet(count: usize) -> Value {
    let cells: Vec<Value> = (0..count)
        .map(|i| {
            let region = ["us-east-1", "eu-west-1"][i % 2];
            let prefix = format!("arn:aws:elasticloadbalancing:{region}:123456789012");
            json!({"name": format!("web-{i:04}"), "values": {
                "cluster": {"name": format!("web-{i:04}-v134"), "region": region},
                "trafficTargets": [{"alb": {
                    "listenerArn": format!("{prefix}:listener/app/web-{i:04}/{i:016x}/{:016x}", i + 1),
                    "stableTargetGroupArn": format!("{prefix}:targetgroup/web-{i:04}-v133/{i:016x}"),
                    "canaryTargetGroupArn": format!("{prefix}:targetgroup/web-{i:04}-v134/{:016x}", i + 7)}}]}})
        })
        .collect();
    let mut value = example();
    value["cells"] = json!(cells);
    value["waves"] =
        json!([{"size": 1}, {"size": "10%"}, {"size": "100%", "maxConcurrentCells": 100}]);
    value.as_object_mut().map(|v| v.remove("approval"));
    value
}

#[test]
fn a_thousand_alb_cells_are_stored_not_carried_in_the_state() {
    let value = alb_fleet(MAX_FLEET_CELLS);
    let size = compact_size(&value);
    assert!(must_be_stored(size), "{size}");
    // Inline, the plan is refused with the way to run it.
    let found = problems(value.clone());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("`cluster-canary fleet start`, which stores a larger plan"),
        "{found:?}"
    );
    // Stored, the same plan is valid, every cell's plan with it.
    let bytes = serde_json::to_vec(&value).expect("json");
    let stored = StoredPlan::of("cc-fleet-plans", "web-eks-1-34", &bytes);
    let fleet = stored.parse(&bytes).expect("a thousand cells, stored");
    assert_eq!(fleet.plans.len(), MAX_FLEET_CELLS);
    assert_eq!(fleet.waves[2].cells.len(), MAX_FLEET_CELLS - 100);
    assert!(stored.key.starts_with("fleet-plans/web-eks-1-34/"));
    assert!(stored.key.ends_with(&format!("{}.json", stored.sha256)));
    // What the fleet's state carries instead of the plan.
    assert!(compact_size(&stored.in_state(&fleet.fleet)) < 400);
    // One more cell than the cap is refused, stored or not.
    let bytes = serde_json::to_vec(&alb_fleet(MAX_FLEET_CELLS + 1)).expect("json");
    let found = StoredPlan::of("b", "web-eks-1-34", &bytes)
        .parse(&bytes)
        .expect_err("refused");
    assert_eq!(
        found.0[0].to_string(),
        format!(
            "cells: at most {MAX_FLEET_CELLS} cells, got {}",
            MAX_FLEET_CELLS + 1
        )
    );
}

#[test]
fn a_stored_plan_over_its_cap_or_changed_is_refused() {
    let mut value = example();
    value["template"]["padding"] = json!("x".repeat(MAX_STORED_FLEET_PLAN_BYTES));
    let found = FleetPlan::parse_storable(value).expect_err("refused");
    assert!(
        found.0[0]
            .to_string()
            .contains("of a stored fleet plan: move what the cells share into `template`"),
        "{found:?}"
    );
    let bytes = serde_json::to_vec(&example()).expect("json");
    let stored = StoredPlan::of("b", "web-eks-1-34", &bytes);
    let mut other = bytes.clone();
    other.push(b' ');
    let found = stored.parse(&other).expect_err("refused");
    assert!(
        found.0[0]
            .to_string()
            .contains("is not the plan this fleet was started with"),
        "{found:?}"
    );
    assert_eq!(
        StoredPlan::from_input(
            &stored.in_state(&FleetPlan::parse(example()).expect("valid").fleet)
        ),
        Some(Ok(stored.clone()))
    );
    assert_eq!(StoredPlan::from_input(&example()), None);
    let empty = json!({"storedPlan": {"bucket": "", "key": "k", "sha256": stored.sha256}});
    let found = StoredPlan::from_input(&empty)
        .expect("a reference")
        .expect_err("refused");
    assert_eq!(
        found.0[0].to_string(),
        "storedPlan: needs a bucket and a key"
    );
}

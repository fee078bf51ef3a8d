use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use canary_aws::{AlarmStateValue, AwsErrorKind, CalendarReading, SloApi};
use canary_core::error_budget::{Budget, BudgetStatus, BudgetUnit, SloBudget, SloReading};
use canary_core::fleet::{FleetPlan, MAX_TALLY_BYTES};
use canary_core::freeze::FreezeSwitch;
use serde_json::json;

use super::*;

const ROLLOUT: &str = "arn:aws:states:us-east-1:123456789012:stateMachine:cc-rollout";
const FLEET_RUN: &str = "arn:aws:states:us-east-1:123456789012:execution:cc-fleet:web-1";
const OTHER_FLEET_RUN: &str = "arn:aws:states:us-east-1:123456789012:execution:cc-fleet:web-2";

fn example() -> Value {
    serde_json::from_str(include_str!("../../../examples/fleets/web-fleet.json")).expect("JSON")
}

const FREEZE_SWITCH: &str = "/cluster-canary/cc/freeze";

fn config() -> FleetConfig {
    FleetConfig {
        rollout_state_machine_arn: ROLLOUT.to_owned(),
        freeze: StackFreeze {
            switch_parameter: Some(FREEZE_SWITCH.to_owned()),
            calendars: Vec::new(),
            health_path: None,
        },
    }
}

/// Step Functions and CloudWatch as the fleet sees them: child executions by name, alarms.
#[derive(Default)]
struct World {
    executions: Mutex<Vec<Execution>>,
    alarms: Vec<AlarmState>,
    /// Changes to ALARM the alarms' history keeps (each since any time asked).
    went: Vec<WentToAlarm>,
    stopped: Mutex<Vec<(String, String)>>,
    events: Mutex<Vec<(String, Value)>>,
    /// S3 objects by `bucket/key`: stored fleet plans.
    objects: Mutex<std::collections::BTreeMap<String, Vec<u8>>>,
    /// The stack's freeze switch.
    switch: Mutex<FreezeSwitch>,
    slos: Slos,
    remaining: Remaining,
}

/// A remaining budget kept in Prometheus and in CloudWatch (`errorBudget.prometheus`,
/// `.cloudwatch`): every query answers the same share left, or nothing; and each ALB target
/// group's requests and 5xx of the last minute (`alb`).
#[derive(Default)]
struct Remaining {
    left: Mutex<Option<f64>>,
    alb: Mutex<(f64, f64)>,
    /// The queries asked, in order (Prometheus's, and CloudWatch's ids).
    asked: Mutex<Vec<String>>,
}

#[async_trait]
impl PrometheusApi for Remaining {
    async fn instant_query(
        &self,
        _: &canary_core::analysis::PrometheusEndpoint,
        query: &str,
        _: SystemTime,
    ) -> Result<Value, canary_aws::QueryError> {
        self.asked.lock().unwrap().push(query.to_owned());
        let result = match *self.left.lock().unwrap() {
            Some(left) => json!([{"metric": {}, "value": [1.7e9, left.to_string()]}]),
            None => json!([]),
        };
        Ok(json!({"resultType": "vector", "result": result}))
    }
}

#[async_trait]
impl CloudWatchApi for Remaining {
    async fn alarms_by_names(&self, _: &[String]) -> Result<Vec<AlarmState>, AwsError> {
        Ok(Vec::new())
    }

    async fn alarms_by_prefix(&self, _: &str) -> Result<Vec<AlarmState>, AwsError> {
        Ok(Vec::new())
    }

    async fn metric_data(
        &self,
        queries: &[canary_aws::MetricQuery],
        _: SystemTime,
        end: SystemTime,
    ) -> Result<std::collections::BTreeMap<String, canary_aws::MetricSeries>, AwsError> {
        let at = end
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let left = *self.left.lock().unwrap();
        let (requests, errors) = *self.alb.lock().unwrap();
        Ok(queries
            .iter()
            .map(|q| {
                self.asked.lock().unwrap().push(q.metric_name.clone());
                let value = match q.metric_name.as_str() {
                    "RequestCount" => Some(requests),
                    "HTTPCode_Target_5XX_Count" => Some(errors),
                    _ => left,
                };
                let points = value.map(|v| vec![(at - 60, v)]).unwrap_or_default();
                (q.id.clone(), canary_aws::MetricSeries { points })
            })
            .collect())
    }
}

/// Application Signals as the fleet sees it: every SLO reports one status, BREACHED or OK.
#[derive(Default, Clone)]
struct Slos {
    breached: Arc<AtomicBool>,
}

impl SloAccounts for Slos {
    fn slos(&self, _: &str, _: Option<&str>) -> Box<dyn SloApi> {
        Box::new(self.clone())
    }
}

#[async_trait]
impl SloApi for Slos {
    async fn budget_reports(
        &self,
        slos: &[&str],
        _: std::time::SystemTime,
    ) -> Result<Vec<SloReading>, AwsError> {
        let breached = self.breached.load(Ordering::SeqCst);
        Ok(slos
            .iter()
            .map(|slo| {
                SloReading::Report(SloBudget {
                    name: (*slo).to_owned(),
                    status: BudgetStatus::parse(if breached { "BREACHED" } else { "OK" }),
                    attainment: Some(if breached { 98.0 } else { 99.5 }),
                    goal: Some(99.0),
                    budget: Some(Budget {
                        unit: BudgetUnit::Requests,
                        total: 1_000,
                        remaining: if breached { -1_000 } else { 500 },
                    }),
                    latency: false,
                    slower_than_seconds: None,
                    period_based: false,
                })
            })
            .collect())
    }
}

impl World {
    /// The switch as `cluster-canary freeze` writes it.
    async fn set_switch(&self, _: &str, switch: &FreezeSwitch) -> Result<(), AwsError> {
        *self.switch.lock().unwrap() = switch.clone();
        Ok(())
    }

    fn child(&self, cell: &str, fleet_run: &str, status: &str, error: Option<&str>) {
        let name = child_name(cell, &child_suffix(fleet_run));
        self.executions.lock().unwrap().push(Execution {
            arn: canary_aws::executions::execution_arn(ROLLOUT, &name),
            name,
            status: status.to_owned(),
            input: None,
            output: None,
            started: 200.0,
            stopped: None,
            error: error.map(str::to_owned),
            cause: error.map(|e| format!("{e}: alarm web-{cell}-5xx in ALARM")),
        });
    }
}

#[async_trait]
impl EventPublisher for World {
    async fn put_event(&self, detail_type: &str, detail: &Value) -> Result<(), AwsError> {
        self.events
            .lock()
            .unwrap()
            .push((detail_type.to_owned(), detail.clone()));
        Ok(())
    }
}

#[async_trait]
impl FreezeApi for World {
    async fn calendar_state(&self, calendar: &str) -> Result<CalendarReading, AwsError> {
        Err(AwsError::new(
            AwsErrorKind::NotFound,
            "GetCalendarState",
            format!("InvalidDocument: {calendar}"),
        ))
    }

    async fn switch(&self, _: &str) -> Result<FreezeSwitch, AwsError> {
        Ok(self.switch.lock().unwrap().clone())
    }

    async fn health_records(
        &self,
        _: &str,
    ) -> Result<Vec<canary_core::health::HealthEvent>, AwsError> {
        Ok(Vec::new())
    }
}

#[async_trait]
impl FleetPlanStore for World {
    async fn get_plan(&self, bucket: &str, key: &str) -> Result<Vec<u8>, AwsError> {
        self.objects
            .lock()
            .unwrap()
            .get(&format!("{bucket}/{key}"))
            .cloned()
            .ok_or_else(|| AwsError::new(AwsErrorKind::NotFound, "GetObject", "NoSuchKey"))
    }
}

#[async_trait]
impl FleetApis for World {
    async fn started_since(
        &self,
        _: &str,
        since: f64,
        status: Option<&str>,
    ) -> Result<Vec<Listed>, AwsError> {
        Ok(self
            .executions
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.started >= since && status.is_none_or(|s| e.status == s))
            .map(|e| Listed {
                arn: e.arn.clone(),
                status: e.status.clone(),
                started: e.started,
                stopped: None,
            })
            .collect())
    }

    async fn describe(&self, arn: &str) -> Result<Execution, AwsError> {
        if arn == FLEET_RUN || arn == OTHER_FLEET_RUN {
            return Ok(Execution {
                arn: arn.to_owned(),
                name: "fleet".to_owned(),
                status: "RUNNING".to_owned(),
                input: None,
                output: None,
                started: 100.0,
                stopped: None,
                error: None,
                cause: None,
            });
        }
        self.executions
            .lock()
            .unwrap()
            .iter()
            .find(|e| e.arn == arn)
            .cloned()
            .ok_or_else(|| {
                AwsError::new(
                    AwsErrorKind::NotFound,
                    "DescribeExecution",
                    "ExecutionDoesNotExist",
                )
            })
    }

    async fn went_to_alarm(
        &self,
        names: &[String],
        _: std::time::SystemTime,
    ) -> Result<Vec<WentToAlarm>, AwsError> {
        Ok(self
            .went
            .iter()
            .filter(|w| names.contains(&w.name))
            .cloned()
            .collect())
    }

    fn slos(&self) -> &dyn SloAccounts {
        &self.slos
    }

    fn prometheus(&self) -> &dyn PrometheusApi {
        &self.remaining
    }

    fn metrics(&self) -> &dyn CloudWatchApi {
        &self.remaining
    }

    async fn stop(&self, arn: &str, error: &str, _cause: &str) -> Result<(), AwsError> {
        self.stopped
            .lock()
            .unwrap()
            .push((arn.to_owned(), error.to_owned()));
        for e in self
            .executions
            .lock()
            .unwrap()
            .iter_mut()
            .filter(|e| e.arn == arn)
        {
            e.status = "ABORTED".to_owned();
            e.error = Some(error.to_owned());
        }
        Ok(())
    }

    async fn alarms(&self, names: &[String]) -> Result<Vec<AlarmState>, AwsError> {
        Ok(self
            .alarms
            .iter()
            .filter(|a| names.contains(&a.name))
            .cloned()
            .collect())
    }
}

async fn call(world: &World, input: Value) -> Value {
    handle(world, &config(), input)
        .await
        .expect("the operation succeeds")
}

fn tally_after(waves: usize) -> Value {
    json!({"wave": waves, "waves": 3, "cells": 6, "failureBudget": 1, "promoted": 0, "failed": 0,
           "stopped": 0, "notStarted": 0, "halt": false})
}

#[tokio::test]
async fn plan_and_waves() {
    let world = World::default();
    // The fleet's first state: the plan as it came, answered with itself and the first tally.
    let planned = call(&world, example()).await;
    assert_eq!(planned["fleet"], example());
    let tally = planned["tally"].clone();
    assert_eq!(tally["waves"], 3);
    assert_eq!(tally["cells"], 6);
    assert_eq!(tally["failureBudget"], 1);
    let mut wave = call(
        &world,
        json!({"op": "wave", "fleet": example(), "tally": tally}),
    )
    .await;
    assert!(
        wave["startedAt"].as_f64().is_some_and(|t| t > 1.7e9),
        "{wave}"
    );
    wave.as_object_mut().map(|w| w.remove("startedAt"));
    assert_eq!(
        wave,
        json!({"number": 1, "cells": [{"cell": "use1-a"}], "maxConcurrency": 10,
               "approvalTimeoutSeconds": 0})
    );
    let wave = call(
        &world,
        json!({"op": "wave", "fleet": example(), "tally": tally_after(2)}),
    )
    .await;
    assert_eq!(wave["number"], 3);
    assert_eq!(wave["cells"].as_array().map(Vec::len), Some(3));
}

#[tokio::test]
async fn an_invalid_fleet_plan_is_refused_with_its_paths() {
    let mut fleet = example();
    fleet["failureBudget"] = json!(9);
    let error = handle(&World::default(), &config(), fleet)
        .await
        .expect_err("refused");
    assert_eq!(error.name(), ErrorName::InvalidPlan);
    assert!(error.to_string().contains("failureBudget: is 9"), "{error}");
    let error = handle(&World::default(), &config(), json!({"op": "launch"}))
        .await
        .expect_err("refused");
    assert_eq!(error.name(), ErrorName::InvalidInput);
}

#[tokio::test]
async fn a_cell_starts_while_the_budget_holds() {
    let world = World::default();
    // use1-b is in wave 2 with euw1-a; one cell of wave 1 failed before it.
    let admit = json!({"op": "admit", "fleet": example(), "cell": "use1-b", "fleetExecution": FLEET_RUN,
                       "wave": 2, "waveStarted": 150.0, "failedBefore": 0});
    let admitted = call(&world, admit.clone()).await;
    assert_eq!(admitted["start"], true);
    assert_eq!(
        admitted["name"],
        format!("use1-b-{}", child_suffix(FLEET_RUN))
    );
    assert_eq!(admitted["plan"]["cluster"]["name"], "web-use1-b-v134");
    // One failure (wave 1's, in the tally) is within the budget of 1; another fleet's failures
    // and an earlier wave's execution (already in the tally) do not count again.
    world.child("use1-a", FLEET_RUN, "FAILED", Some("CheckFailed"));
    world.child("euw1-a", OTHER_FLEET_RUN, "FAILED", Some("CheckFailed"));
    let mut admit = admit;
    admit["failedBefore"] = json!(1);
    assert_eq!(call(&world, admit.clone()).await["start"], true);
    // This wave's euw1-a fails: 2, more than 1.
    world.child("euw1-a", FLEET_RUN, "FAILED", Some("CheckFailed"));
    let refused = call(&world, admit).await;
    assert_eq!(refused["start"], false);
    assert!(refused["plan"].is_null());
    assert!(refused["reason"]
        .as_str()
        .unwrap()
        .contains("2 cells failed, more than the failure budget of 1"));
}

#[tokio::test]
async fn a_halt_stops_the_running_cells_only_when_the_plan_says_abort_running() {
    let world = World::default();
    world.child("euw1-a", FLEET_RUN, "FAILED", Some("CheckFailed"));
    world.child("use1-b", FLEET_RUN, "RUNNING", None);
    world.child("use1-c", OTHER_FLEET_RUN, "RUNNING", None);
    let halt = json!({"op": "halt", "fleet": example(), "cell": "euw1-a", "fleetExecution": FLEET_RUN,
                      "wave": 2, "waveStarted": 150.0, "failedBefore": 1});
    assert_eq!(
        call(&world, halt.clone()).await["stopped"],
        0,
        "finishRunning stops nothing"
    );
    let mut fleet = example();
    fleet["onHalt"] = json!("abortRunning");
    let mut halt = halt;
    halt["fleet"] = fleet;
    let mut within = halt.clone();
    within["failedBefore"] = json!(0);
    assert_eq!(
        call(&world, within).await["stopped"],
        0,
        "1 failure is within the budget of 1"
    );
    assert_eq!(call(&world, halt).await["stopped"], 1);
    let stopped = world.stopped.lock().unwrap().clone();
    assert_eq!(stopped.len(), 1);
    assert!(stopped[0]
        .0
        .ends_with(&format!("use1-b-{}", child_suffix(FLEET_RUN))));
    assert_eq!(stopped[0].1, HALT_ERROR);
    // Each look at the failed cell said `Cell Failed`, with its wave, rollout, error and cause.
    let events = world.events.lock().unwrap().clone();
    assert_eq!(events.len(), 3, "{events:?}");
    let (detail_type, detail) = &events[0];
    assert_eq!(detail_type, CELL_FAILED);
    assert_eq!(detail["cell"], "euw1-a");
    assert_eq!(detail["wave"], 2);
    assert_eq!(detail["status"], "FAILED");
    assert_eq!(detail["error"], "CheckFailed");
    assert_eq!(
        detail["cause"],
        "CheckFailed: alarm web-euw1-a-5xx in ALARM"
    );
    assert!(detail["execution"]
        .as_str()
        .is_some_and(|arn| arn.ends_with(&format!("euw1-a-{}", child_suffix(FLEET_RUN)))));
}

#[tokio::test]
async fn a_cell_the_fleet_stopped_itself_is_no_failed_cell() {
    let world = World::default();
    world.child("use1-b", FLEET_RUN, "ABORTED", Some(HALT_ERROR));
    let halt = json!({"op": "halt", "fleet": example(), "cell": "use1-b", "fleetExecution": FLEET_RUN,
                      "wave": 2, "waveStarted": 150.0, "failedBefore": 1});
    call(&world, halt).await;
    assert_eq!(*world.events.lock().unwrap(), []);
}

#[tokio::test]
async fn judging_a_wave_tells_failed_cells_from_stopped_ones_and_names_them() {
    let world = World::default();
    world.child("euw1-a", FLEET_RUN, "FAILED", Some("CheckFailed"));
    world.child("use1-b", FLEET_RUN, "ABORTED", Some(HALT_ERROR));
    let results = json!([{"cell": "euw1-a", "status": "notPromoted"}, {"cell": "use1-b", "status": "notPromoted"}]);
    let judged = call(
        &world,
        json!({"op": "judge", "fleet": example(), "tally": tally_after(1),
                                     "results": results, "fleetExecution": FLEET_RUN}),
    )
    .await;
    assert_eq!(judged["wave"], 2);
    assert_eq!(judged["failed"], 1);
    assert_eq!(judged["stopped"], 1);
    assert_eq!(
        judged["halt"], false,
        "one failure is within the budget of 1"
    );
    assert_eq!(judged["failures"][0]["cell"], "euw1-a");
    assert_eq!(judged["failures"][0]["error"], "CheckFailed");

    // A second failure spends the budget; a cell whose execution never started failed too.
    let results = json!([{"cell": "euw1-b", "status": "notPromoted"}, {"cell": "use1-c", "status": "promoted"}]);
    let halted = call(
        &world,
        json!({"op": "judge", "fleet": example(), "tally": judged,
                                     "results": results, "fleetExecution": FLEET_RUN}),
    )
    .await;
    assert_eq!(halted["halt"], true);
    assert_eq!(halted["promoted"], 1);
    let message = halted["message"].as_str().unwrap();
    assert!(message.starts_with("fleet web-eks-1-34 halted after wave 3 of 3: 2 cells failed, more than the failure budget of 1"), "{message}");
    assert!(
        message.contains(
            "euw1-a (wave 2, FAILED CheckFailed: CheckFailed: alarm web-euw1-a-5xx in ALARM)"
        ),
        "{message}"
    );
    assert!(
        message.contains("euw1-b (wave 3, UNKNOWN NotStarted"),
        "{message}"
    );
}

#[tokio::test]
async fn the_tally_stays_within_its_budget_at_a_thousand_failed_cells() {
    let cells: Vec<Value> = (0..1000)
        .map(|i| json!({"name": format!("c{i}"), "plan": {}}))
        .collect();
    let fleet = ValidFleet {
        fleet: FleetPlan {
            schema: None,
            name: "big".to_owned(),
            template: None,
            cells: serde_json::from_value(json!(cells)).expect("cells"),
            waves: Vec::new(),
            max_concurrent_cells: None,
            failure_budget: 0,
            soak: None,
            order: Default::default(),
            on_halt: OnHalt::FinishRunning,
            approval: None,
            rollback_promoted_on_halt: false,
        },
        plans: Vec::new(),
        waves: Vec::new(),
    };
    let results: Vec<CellResult> = (0..1000)
        .map(|i| CellResult {
            cell: format!("c{i}"),
            status: CellStatus::NotPromoted,
        })
        .collect();
    let described: Vec<(String, Option<Execution>)> = (0..1000)
        .map(|i| {
            (
                format!("c{i}"),
                Some(Execution {
                    arn: format!("{ROLLOUT}:c{i}-0123456789")
                        .replace(":stateMachine:", ":execution:"),
                    name: format!("c{i}-0123456789"),
                    status: "FAILED".to_owned(),
                    input: None,
                    output: None,
                    started: 1.0,
                    stopped: None,
                    error: Some("E".repeat(300)),
                    cause: Some("C".repeat(40_000)),
                }),
            )
        })
        .collect();
    let tally = Tally::default().judge(&fleet, &results, &described);
    assert_eq!(tally.failed, 1000);
    assert!(tally.failures.len() <= canary_core::fleet::MAX_NAMED_FAILURES);
    assert!(serde_json::to_vec(&tally).unwrap().len() <= MAX_TALLY_BYTES);
    assert!(tally.message.contains("and 990 more"), "{}", tally.message);
}

fn alarm(name: &str, state: AlarmStateValue) -> AlarmState {
    AlarmState {
        name: name.to_owned(),
        composite: false,
        state,
        reason: "Threshold Crossed".to_owned(),
        since: None,
    }
}

#[tokio::test]
async fn the_soak_halts_the_fleet_on_an_alarm_or_a_missing_one() {
    let soak = |world: World| async move {
        call(
            &world,
            json!({"op": "soak", "fleet": example(), "tally": tally_after(1),
                   "soakStarted": "2026-11-26T10:00:00Z"}),
        )
        .await
    };
    let calm = soak(World {
        alarms: vec![alarm("web-fleet-5xx", AlarmStateValue::Ok)],
        ..World::default()
    })
    .await;
    assert_eq!(calm["halt"], false);
    let alarmed = soak(World {
        alarms: vec![alarm("web-fleet-5xx", AlarmStateValue::Alarm)],
        ..World::default()
    })
    .await;
    assert_eq!(alarmed["halt"], true);
    assert!(alarmed["message"]
        .as_str()
        .unwrap()
        .contains("the soak after wave 1 failed: alarm web-fleet-5xx is in ALARM"));
    // OK again by the soak's end, but it fired while the cells soaked.
    let fired = soak(World {
        alarms: vec![alarm("web-fleet-5xx", AlarmStateValue::Ok)],
        went: vec![WentToAlarm {
            name: "web-fleet-5xx".to_owned(),
            at: "2026-11-26T10:00:05Z".to_owned(),
            reason: "Threshold Crossed".to_owned(),
        }],
        ..World::default()
    })
    .await;
    assert_eq!(fired["halt"], true);
    assert!(fired["message"].as_str().unwrap().contains(
        "alarm web-fleet-5xx went to ALARM during the soak, at 2026-11-26T10:00:05Z (Threshold Crossed)"
    ));
    let missing = soak(World::default()).await;
    assert!(missing["message"]
        .as_str()
        .unwrap()
        .contains("alarm web-fleet-5xx does not exist"));
}

#[tokio::test]
async fn a_stopped_fleet_stops_its_running_cells_and_no_one_elses() {
    let world = World::default();
    world.child("use1-a", FLEET_RUN, "SUCCEEDED", None);
    world.child("use1-b", FLEET_RUN, "RUNNING", None);
    world.child("euw1-a", FLEET_RUN, "RUNNING", None);
    world.child("use1-c", OTHER_FLEET_RUN, "RUNNING", None);
    // As the template's FleetSafetyNet rule hands it over.
    let event =
        |status: &str| json!({"op": "stopCells", "fleetExecution": FLEET_RUN, "status": status});
    assert_eq!(call(&world, event("SUCCEEDED")).await["stopped"], 0);
    assert_eq!(call(&world, event("ABORTED")).await["stopped"], 2);
    let stopped = world.stopped.lock().unwrap().clone();
    assert!(stopped
        .iter()
        .all(|(arn, error)| arn.ends_with(&child_suffix(FLEET_RUN)) && error == STOPPED_ERROR));
    // The fleet's last word, once: the one that ended without halting (a SUCCEEDED fleet is
    // not stopped here).
    let events = world.events.lock().unwrap().clone();
    let [(detail_type, detail)] = &events[..] else {
        panic!("one event: {events:?}");
    };
    assert_eq!(detail_type, FLEET_STOPPED);
    assert_eq!(
        (
            &detail["status"],
            &detail["cellsStopped"],
            &detail["fleetExecutionArn"]
        ),
        (&json!("ABORTED"), &json!(2), &json!(FLEET_RUN))
    );
    let error = handle(
        &world,
        &config(),
        json!({"op": "stopCells", "status": "ABORTED"}),
    )
    .await
    .expect_err("an event without its execution is refused");
    assert_eq!(error.name(), ErrorName::InvalidInput);
}

#[test]
fn child_names_fit_step_functions() {
    let name = child_name(
        &"c".repeat(canary_core::fleet::MAX_CELL_NAME),
        &child_suffix(FLEET_RUN),
    );
    assert!(name.len() <= 80);
    assert_ne!(child_suffix(FLEET_RUN), child_suffix(OTHER_FLEET_RUN));
}

#[tokio::test]
async fn a_wave_that_waits_for_a_person_says_so_and_a_refusal_halts_the_fleet() {
    let world = World::default();
    let mut fleet = example();
    fleet["approval"] = json!({"beforeWaves": [2], "timeoutSeconds": 600});
    let first = call(
        &world,
        json!({"op": "wave", "fleet": fleet, "tally": tally_after(0)}),
    )
    .await;
    assert_eq!(first["approvalTimeoutSeconds"], 0);
    let second = call(
        &world,
        json!({"op": "wave", "fleet": fleet, "tally": tally_after(1)}),
    )
    .await;
    assert_eq!(second["approvalTimeoutSeconds"], 600);
    let rejected = call(&world, json!({"op": "notApproved", "fleet": fleet, "tally": tally_after(1), "wave": 2,
        "failure": {"Error": "WaveRejected", "Cause": "rejected by sam: the canary cells look slow"}})).await;
    assert_eq!(rejected["halt"], true);
    let message = rejected["message"].as_str().unwrap();
    assert!(
        message.contains(
            "wave 2 was rejected (WaveRejected: rejected by sam: the canary cells look slow)"
        ),
        "{message}"
    );
    let late = call(
        &world,
        json!({"op": "notApproved", "fleet": fleet, "tally": tally_after(1), "wave": 2,
        "failure": {"Error": "States.Timeout", "Cause": ""}}),
    )
    .await;
    assert!(late["message"]
        .as_str()
        .unwrap()
        .contains("nobody approved wave 2 in time"));
}

#[tokio::test]
async fn a_halted_fleet_lists_its_promoted_cells_and_says_which_went_back() {
    let world = World::default();
    world.child("use1-a", FLEET_RUN, "SUCCEEDED", None);
    world.child("euw1-a", FLEET_RUN, "FAILED", Some("CheckFailed"));
    world.child("use1-b", FLEET_RUN, "SUCCEEDED", None);
    world.child("use1-c", OTHER_FLEET_RUN, "SUCCEEDED", None);
    let promoted = call(
        &world,
        json!({"op": "promoted", "fleetExecution": FLEET_RUN}),
    )
    .await;
    assert_eq!(
        promoted["prefix"],
        "arn:aws:states:us-east-1:123456789012:execution:cc-rollout:"
    );
    let suffix = child_suffix(FLEET_RUN);
    let mut names: Vec<&str> = promoted["names"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    names.sort();
    assert_eq!(
        names,
        [format!("use1-a-{suffix}"), format!("use1-b-{suffix}")]
    );
    let mut halted = tally_after(2);
    halted["halt"] = json!(true);
    halted["message"] = json!("fleet web-eks-1-34 halted after wave 2 of 3");
    let results = json!([{"restored": true}, {"restored": false, "kept": format!("use1-b-{suffix}: InvalidInput")}]);
    let told = call(
        &world,
        json!({"op": "rolledBack", "tally": halted, "results": results}),
    )
    .await;
    let message = told["message"].as_str().unwrap();
    assert!(
        message.contains(
            "Promoted cells rolled back to their baselines (rollbackPromotedOnHalt): 1 of 2"
        ),
        "{message}"
    );
    assert!(
        message.contains(&format!("NOT rolled back: use1-b-{suffix}: InvalidInput")),
        "{message}"
    );
}

#[tokio::test]
async fn a_wave_past_the_last_and_an_unknown_cell_are_refused_by_name() {
    let world = World::default();
    let past = handle(
        &world,
        &config(),
        json!({"op": "wave", "fleet": example(), "tally": tally_after(3)}),
    )
    .await
    .expect_err("no fourth wave");
    assert_eq!(past.name(), ErrorName::InvalidInput);
    assert!(
        past.to_string()
            .contains("the fleet has 3 waves; there is no wave 4"),
        "{past}"
    );
    let unknown = handle(
        &world,
        &config(),
        json!({"op": "admit", "fleet": example(), "cell": "use9-z",
        "fleetExecution": FLEET_RUN, "wave": 1, "waveStarted": 150.0, "failedBefore": 0}),
    )
    .await
    .expect_err("not a cell");
    assert_eq!(unknown.name(), ErrorName::InvalidInput);
    assert!(
        unknown
            .to_string()
            .contains("`use9-z` is not a cell of the fleet"),
        "{unknown}"
    );
    assert!(world.stopped.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_stored_plan_travels_as_its_reference_and_is_read_again_at_each_step() {
    let world = World::default();
    let bytes = serde_json::to_vec(&example()).unwrap();
    let stored = canary_core::fleet::StoredPlan::of("cc-fleet-plans", "web-eks-1-34", &bytes);
    world
        .objects
        .lock()
        .unwrap()
        .insert(format!("{}/{}", stored.bucket, stored.key), bytes);
    let planned = call(&world, json!({ "storedPlan": stored })).await;
    // The state carries the reference, and what the state machine reads of the plan.
    let reference = planned["fleet"].clone();
    assert_eq!(
        reference,
        json!({"storedPlan": stored, "name": "web-eks-1-34",
               "soak": {"seconds": 900, "alarms": ["web-fleet-5xx"]}}),
    );
    assert_eq!(planned["tally"]["cells"], 6);
    // A summary field that is not the plan's is refused.
    let mut wrong = reference.clone();
    wrong["name"] = json!("other");
    let error = handle(
        &world,
        &config(),
        json!({"op": "wave", "fleet": wrong, "tally": tally_after(1)}),
    )
    .await
    .expect_err("refused");
    assert!(
        error
            .to_string()
            .contains("name: is \"other\" beside `storedPlan`"),
        "{error}"
    );
    let admitted = call(
        &world,
        json!({"op": "admit", "fleet": reference, "cell": "use1-b", "fleetExecution": FLEET_RUN,
               "wave": 2, "waveStarted": 150.0, "failedBefore": 0}),
    )
    .await;
    assert_eq!(admitted["plan"]["cluster"]["name"], "web-use1-b-v134");

    // The object replaced in the bucket while the fleet runs: refused, never read as the plan.
    let mut edited = example();
    edited["failureBudget"] = json!(0);
    world.objects.lock().unwrap().insert(
        format!("{}/{}", stored.bucket, stored.key),
        serde_json::to_vec(&edited).unwrap(),
    );
    let error = handle(
        &world,
        &config(),
        json!({"op": "wave", "fleet": reference, "tally": tally_after(1)}),
    )
    .await
    .expect_err("refused");
    assert_eq!(error.name(), ErrorName::InvalidPlan);
    assert!(
        error
            .to_string()
            .contains("is not the plan this fleet was started with"),
        "{error}"
    );

    // No object there: said with where it was looked for.
    world.objects.lock().unwrap().clear();
    let error = handle(&world, &config(), reference)
        .await
        .expect_err("refused");
    assert_eq!(error.name(), ErrorName::InvalidPlan);
    assert!(
        error.to_string().contains(&format!(
            "there is no fleet plan at s3://cc-fleet-plans/{}",
            stored.key
        )),
        "{error}"
    );
    // A reference with anything else beside it, or a digest that is not one.
    for (input, says) in [
        (
            json!({"storedPlan": {"bucket": "b", "key": "k", "sha256": "00"}}),
            "64 lowercase hex digits",
        ),
        (
            json!({"storedPlan": {"bucket": "b", "key": "k", "sha256": "0".repeat(64)}, "cells": []}),
            "none of the plan's fields but name, soak, rollbackPromotedOnHalt",
        ),
    ] {
        let error = handle(&world, &config(), input).await.expect_err("refused");
        assert_eq!(error.name(), ErrorName::InvalidPlan);
        assert!(error.to_string().contains(says), "{error}");
    }
}

#[tokio::test]
async fn a_cell_that_compares_with_its_peers_starts_with_the_promoted_ones_of_its_region() {
    let world = World::default();
    let fleet = |scope: &str| {
        let mut fleet = example();
        fleet["template"]["analysis"] = json!({"compare": {"periodSeconds": 60, "lookbackSeconds": 600,
            "metrics": [{"name": "latency", "alb": "latency"}], "peers": {"minPeers": 1, "scope": scope}}});
        fleet
    };
    // use1-a (wave 1) and euw1-a (wave 2, another region) are promoted; use1-b is wave 2's.
    world.child("use1-a", FLEET_RUN, "SUCCEEDED", None);
    world.child("euw1-a", FLEET_RUN, "SUCCEEDED", None);
    world.child("use1-c", OTHER_FLEET_RUN, "SUCCEEDED", None);
    let admit = |scope: &str| {
        json!({"op": "admit", "fleet": fleet(scope), "cell": "use1-b", "fleetExecution": FLEET_RUN,
               "wave": 2, "waveStarted": 150.0, "failedBefore": 0})
    };
    let admitted = call(&world, admit("fleet")).await;
    let peers = &admitted["plan"]["analysis"]["compare"]["peers"]["cells"];
    assert_eq!(
        peers,
        &json!([{"name": "use1-a", "alb": [{
            "listenerArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/web-use1-a/0101010101010101/fffffffffffffff1",
            "canaryTargetGroupArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/web-use1-a-v134/1010101010101010"}]}]),
        "{admitted}"
    );
    // Its wave's only other promoted cell is in another region: no peer.
    let admitted = call(&world, admit("wave")).await;
    assert!(
        admitted["plan"]["analysis"]["compare"]["peers"]
            .get("cells")
            .is_none(),
        "{admitted}"
    );
    assert_eq!(admitted["start"], true);
}

#[tokio::test]
async fn a_freeze_holds_the_next_wave_and_halts_the_fleet_past_its_bound() {
    let world = World::default();
    let fleet = example();
    let tally = Tally::start(&canary_core::fleet::FleetPlan::parse(fleet.clone()).expect("valid"));
    let ask = |since: u64| json!({"op": "freeze", "fleet": fleet, "tally": tally, "wave": 1, "since": since, "fleetExecution": FLEET_RUN});
    let open = handle(&world, &config(), ask(0)).await.expect("answered");
    assert_eq!(
        (open["frozen"].clone(), open["tally"]["halt"].clone()),
        (json!(false), json!(false))
    );
    assert!(world.events.lock().unwrap().is_empty());

    world
        .set_switch(
            FREEZE_SWITCH,
            &FreezeSwitch {
                frozen: true,
                reason: "incident 4711".to_owned(),
                since: "2026-11-27T03:00:00Z".to_owned(),
                by: "arn:aws:iam::123456789012:role/oncall".to_owned(),
            },
        )
        .await
        .expect("set");
    let held = handle(&world, &config(), ask(0)).await.expect("answered");
    assert_eq!(held["frozen"], json!(true));
    assert_eq!(held["tooLong"], json!(false));
    assert!(
        held["reason"].as_str().unwrap().contains("incident 4711"),
        "{held}"
    );
    // An hour's bound in 100 looks is 36 s: no more often than the cells check (60 s).
    assert_eq!(held["intervalSeconds"], json!(60));
    let events = world.events.lock().unwrap().clone();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].0, WAVE_FROZEN);
    assert_eq!(events[0].1["wave"], json!(1));

    // Held since long before the bound (the example's cells' default: at most an hour).
    let too_long = handle(&world, &config(), ask(1)).await.expect("answered");
    assert_eq!(too_long["tooLong"], json!(true));
    assert_eq!(too_long["tally"]["halt"], json!(true));
    let message = too_long["tally"]["message"].as_str().unwrap();
    assert!(
        message.contains("wave 1 did not start: frozen too long"),
        "{message}"
    );
    assert_eq!(world.events.lock().unwrap().len(), 1, "no second event");
}

#[tokio::test]
async fn a_spent_error_budget_of_its_cells_slo_holds_the_next_wave() {
    let world = World::default();
    let mut fleet = example();
    fleet["template"]["errorBudget"] = json!({"slos": ["web-availability"]});
    let tally = Tally::start(&canary_core::fleet::FleetPlan::parse(fleet.clone()).expect("valid"));
    let ask = json!({"op": "freeze", "fleet": fleet, "tally": tally, "wave": 1, "since": 0, "fleetExecution": FLEET_RUN});
    let open = handle(&world, &config(), ask.clone())
        .await
        .expect("answered");
    assert_eq!(open["frozen"], json!(false), "{open}");

    world.slos.breached.store(true, Ordering::SeqCst);
    let held = handle(&world, &config(), ask).await.expect("answered");
    assert_eq!(held["frozen"], json!(true), "{held}");
    let reason = held["reason"].as_str().unwrap();
    // Every cell names the SLO: one reason for the wave.
    assert_eq!(
        reason
            .matches("the error budget of SLO web-availability is spent")
            .count(),
        1,
        "{reason}"
    );
    let events = world.events.lock().unwrap().clone();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].0, WAVE_FROZEN);
}

#[tokio::test]
async fn a_spent_remaining_budget_in_prometheus_or_cloudwatch_holds_the_next_wave() {
    let world = World::default();
    let mut fleet = example();
    fleet["template"]["analysis"]["prometheus"] = json!({"url": "http://127.0.0.1:9090",
        "checks": [{"name": "5xx", "query": "sum(rate(http_errors_total[2m]))", "max": 1}]});
    fleet["template"]["errorBudget"] = json!({
        "prometheus": [{"name": "checkout-sloth",
            "query": "slo:period_error_budget_remaining:ratio{sloth_service=\"checkout\"}"}],
        "cloudwatch": [{"name": "checkout-kept", "namespace": "Shop", "metricName": "BudgetRemaining"}]});
    let tally = Tally::start(&canary_core::fleet::FleetPlan::parse(fleet.clone()).expect("valid"));
    let ask = json!({"op": "freeze", "fleet": fleet, "tally": tally, "wave": 3, "since": 0, "fleetExecution": FLEET_RUN});

    *world.remaining.left.lock().unwrap() = Some(0.6);
    let open = handle(&world, &config(), ask.clone())
        .await
        .expect("answered");
    assert_eq!(open["frozen"], json!(false), "{open}");
    // Each query once for the wave, however many of its cells' plans name it.
    assert_eq!(
        *world.remaining.asked.lock().unwrap(),
        [
            "slo:period_error_budget_remaining:ratio{sloth_service=\"checkout\"}",
            "BudgetRemaining"
        ]
    );

    *world.remaining.left.lock().unwrap() = Some(-0.1);
    let held = handle(&world, &config(), ask.clone())
        .await
        .expect("answered");
    assert_eq!(held["frozen"], json!(true), "{held}");
    let reason = held["reason"].as_str().unwrap();
    for budget in ["checkout-sloth", "checkout-kept"] {
        assert!(
            reason.contains(&format!("the error budget of SLO {budget} is spent")),
            "{reason}"
        );
    }

    // No answer: too little data, which holds unless the plan says go.
    *world.remaining.left.lock().unwrap() = None;
    let unknown = handle(&world, &config(), ask).await.expect("answered");
    assert!(
        unknown["reason"]
            .as_str()
            .unwrap()
            .contains("too little data"),
        "{unknown}"
    );
}

#[tokio::test]
async fn the_soak_halts_the_fleet_when_a_promoted_cells_new_cluster_burns_its_budget_slowly() {
    let mut fleet = example();
    fleet["template"]["errorBudget"] = json!({"slos": ["web-availability"]});
    let ask = json!({"op": "soak", "fleet": fleet, "tally": tally_after(1),
                     "soakStarted": "2026-11-26T10:00:00Z", "fleetExecution": FLEET_RUN});
    let soak = |world| call(world, ask.clone());
    let world = World {
        alarms: vec![alarm("web-fleet-5xx", AlarmStateValue::Ok)],
        ..World::default()
    };
    world.child("use1-a", FLEET_RUN, "SUCCEEDED", None);
    *world.remaining.alb.lock().unwrap() = (1_000.0, 0.0);
    assert_eq!(soak(&world).await["halt"], false);
    // A cell of the wave that did not promote is not the soak's to judge.
    world.executions.lock().unwrap()[0].status = "FAILED".to_owned();
    *world.remaining.alb.lock().unwrap() = (1_000.0, 500.0);
    assert_eq!(soak(&world).await["halt"], false);
    world.executions.lock().unwrap()[0].status = "SUCCEEDED".to_owned();

    // 5 % of its requests fail: 5× the pace of a 99 % goal, under the slow rate of 6.
    *world.remaining.alb.lock().unwrap() = (1_000.0, 50.0);
    assert_eq!(soak(&world).await["halt"], false);

    // 10 %: 10×, over the soak (900 s) and a twelfth of it.
    *world.remaining.alb.lock().unwrap() = (1_000.0, 100.0);
    let burnt = soak(&world).await;
    assert_eq!(burnt["halt"], true, "{burnt}");
    let message = burnt["message"].as_str().unwrap();
    assert!(
        message.contains(
            "the soak after wave 1 failed: cell use1-a: the new cluster burns SLO web-availability's \
             error budget 10.0× over the last 15 min and 10.0× over 75 s, at least 6× in both"
        ),
        "{message}"
    );
}

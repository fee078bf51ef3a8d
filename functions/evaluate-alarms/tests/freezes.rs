//! Change freezes over the wire: Change Calendars as SSM keeps them (iCalendar documents, the
//! moto harness's GetCalendarState) and the stack's freeze switch (an SSM parameter), read by
//! the function as `main.rs` builds it. A step's last check is held while a calendar is CLOSED
//! or the switch is on, counted once it opens, rolled back past the plan's bound; a failing
//! check is never held; Admit refuses a calendar that does not exist, before anything moved.

use std::time::{SystemTime, UNIX_EPOCH};

use aws_sdk_ssm as ssm;
use canary_core::NamedError;
use cluster_canary_tests::{Moto, World};
use evaluate_alarms::{handle, Clients};
use serde_json::{json, Value};

const SWITCH: &str = "/cluster-canary/cc/freeze";

struct Env {
    _moto: Moto,
    world: World,
    ssm: ssm::Client,
    clients: Clients,
}

/// An iCalendar document as the Change Calendar console writes it: one event from `from` to
/// `to` (seconds from now).
fn calendar(kind: &str, from: i64, to: i64) -> String {
    let at = |offset: i64| {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("clock")
            .as_secs() as i64
            + offset;
        aws_smithy_types::DateTime::from_secs(secs)
            .fmt(aws_smithy_types::date_time::Format::DateTime)
            .expect("time")
            .replace(['-', ':'], "")
    };
    format!(
        "BEGIN:VCALENDAR\r\nPRODID:-//AWS//Change Calendar 1.0//EN\r\nVERSION:2.0\r\nX-CALENDAR-TYPE:{kind}\r\n\
         X-WR-CALDESC:release freeze\r\nBEGIN:VEVENT\r\nDTSTAMP:20261101T000000Z\r\nUID:freeze-1\r\n\
         SUMMARY:Holiday freeze\r\nDTSTART:{}\r\nDTEND:{}\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n",
        at(from),
        at(to)
    )
}

impl Env {
    async fn start() -> Env {
        let moto = Moto::start();
        let world = moto.seed();
        let config = moto.sdk_config().await;
        let ssm = ssm::Client::new(&config);
        ssm.put_parameter()
            .name(SWITCH)
            .value(r#"{"frozen": false}"#)
            .r#type(ssm::types::ParameterType::String)
            .send()
            .await
            .expect("the stack's switch");
        Env {
            _moto: moto,
            world,
            ssm,
            clients: Clients::from_config(&config, &|name| {
                (name == "FREEZE_PARAMETER").then(|| SWITCH.to_owned())
            }),
        }
    }

    async fn calendar(&self, name: &str, content: String) {
        self.ssm
            .create_document()
            .name(name)
            .content(content)
            .document_type(ssm::types::DocumentType::ChangeCalendar)
            .document_format(ssm::types::DocumentFormat::Text)
            .send()
            .await
            .expect("calendar created");
    }

    fn plan(&self, freeze: Value) -> Value {
        json!({
            "cluster": {"name": "green", "region": "us-east-1"},
            "trafficTargets": [{"alb": {
                "listenerArn": self.world.listener,
                "stableTargetGroupArn": self.world.blue,
                "canaryTargetGroupArn": self.world.green,
            }}],
            "steps": [{"weight": 10}, {"weight": 100}],
            "bake": {"seconds": 120, "checkIntervalSeconds": 60},
            "freeze": freeze,
        })
    }

    /// The last check of step 1's bake, held since `frozen_since` (0: not held).
    async fn last_check(&self, freeze: Value, frozen_since: u64) -> Value {
        let progress = json!({"check": 2, "checks": 2, "checkIntervalSeconds": 60, "step": 1,
                              "steps": 2, "frozenSince": frozen_since});
        handle(
            &self.clients.apis(),
            json!({"operation": "evaluate", "plan": self.plan(freeze), "progress": progress,
                   "executionArn": "arn:aws:states:us-east-1:123456789012:execution:cc-rollout:green"}),
        )
        .await
        .expect("evaluated")
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs()
}

#[tokio::test]
async fn a_closed_calendar_holds_the_last_check_until_it_opens_or_the_bound_runs_out() {
    let env = Env::start().await;
    env.calendar("release-freeze", calendar("DEFAULT_OPEN", -600, 3_600))
        .await;
    // DEFAULT_CLOSED with an open window now: OPEN.
    env.calendar("change-window", calendar("DEFAULT_CLOSED", -600, 3_600))
        .await;
    let freeze = json!({"calendars": ["change-window", "release-freeze"], "maxFrozenSeconds": 600});

    let held = env.last_check(freeze.clone(), 0).await;
    assert_eq!(held["rollback"], json!(false), "{held}");
    assert_eq!(
        held["check"],
        json!(1),
        "not counted: the bake takes one more check"
    );
    let since = held["frozenSince"].as_u64().expect("held since");
    assert!(since.abs_diff(now()) < 60, "{held}");
    let summary = held["summary"].as_str().unwrap();
    assert!(
        summary.contains("Change Calendar release-freeze is CLOSED (opens at "),
        "{summary}"
    );
    assert!(
        !summary.contains("change-window"),
        "an open window is no freeze: {summary}"
    );

    // Still held a while later: the same hold goes on.
    let still = env.last_check(freeze.clone(), since - 300).await;
    assert_eq!(
        (still["check"].clone(), still["frozenSince"].clone()),
        (json!(1), json!(since - 300))
    );

    // Past the bound: rolled back, frozen too long.
    let too_long = env.last_check(freeze.clone(), since - 601).await;
    assert_eq!(too_long["rollback"], json!(true), "{too_long}");
    assert!(
        too_long["summary"]
            .as_str()
            .unwrap()
            .contains("frozen too long"),
        "{too_long}"
    );

    // A calendar whose freeze ended: counted, the bake ends.
    env.calendar("last-week", calendar("DEFAULT_OPEN", -7_200, -3_600))
        .await;
    let open = env
        .last_check(json!({"calendars": ["last-week"]}), since)
        .await;
    assert_eq!(
        (open["check"].clone(), open["frozenSince"].clone()),
        (json!(2), json!(0)),
        "{open}"
    );
}

#[tokio::test]
async fn the_switch_freezes_the_gate_and_a_failing_check_is_never_held() {
    let env = Env::start().await;
    let gate = |since: u64| {
        json!({"operation": "freezeGate", "plan": env.plan(json!({})), "since": since,
               "executionArn": "arn:aws:states:us-east-1:123456789012:execution:cc-rollout:green"})
    };
    let open = handle(&env.clients.apis(), gate(0)).await.expect("gate");
    assert_eq!(
        (open["frozen"].clone(), open["tooLong"].clone()),
        (json!(false), json!(false))
    );

    let switch = json!({"frozen": true, "reason": "incident 4711", "since": "2026-11-27T03:00:00Z",
                        "by": "oncall"});
    env.ssm
        .put_parameter()
        .name(SWITCH)
        .value(switch.to_string())
        .overwrite(true)
        .send()
        .await
        .expect("switch on");
    let held = handle(&env.clients.apis(), gate(0)).await.expect("gate");
    assert_eq!(held["frozen"], json!(true), "{held}");
    assert!(
        held["reason"].as_str().unwrap().contains("incident 4711"),
        "{held}"
    );
    assert_eq!(held["intervalSeconds"], json!(60));
    // The plan's default bound here is an hour.
    let too_long = handle(&env.clients.apis(), gate(now() - 3_700))
        .await
        .expect("gate");
    assert_eq!(too_long["tooLong"], json!(true), "{too_long}");

    // A failing check rolls back whatever the freeze: an alarm in ALARM.
    let cw = aws_sdk_cloudwatch::Client::new(&env._moto.sdk_config().await);
    cw.put_metric_alarm()
        .alarm_name("green-5xx")
        .namespace("Shop")
        .metric_name("Errors")
        .statistic(aws_sdk_cloudwatch::types::Statistic::Sum)
        .period(60)
        .evaluation_periods(1)
        .threshold(1.0)
        .comparison_operator(aws_sdk_cloudwatch::types::ComparisonOperator::GreaterThanThreshold)
        .send()
        .await
        .expect("alarm");
    cw.set_alarm_state()
        .alarm_name("green-5xx")
        .state_value(aws_sdk_cloudwatch::types::StateValue::Alarm)
        .state_reason("5xx")
        .send()
        .await
        .expect("ALARM");
    let mut plan = env.plan(json!({}));
    plan["analysis"] = json!({"alarms": {"names": ["green-5xx"]}});
    let progress =
        json!({"check": 2, "checks": 2, "checkIntervalSeconds": 60, "step": 1, "steps": 2});
    let failed = handle(
        &env.clients.apis(),
        json!({"operation": "evaluate", "plan": plan, "progress": progress}),
    )
    .await
    .expect("evaluated");
    assert_eq!(failed["rollback"], json!(true), "{failed}");
    assert_eq!(failed["frozenSince"], json!(0), "{failed}");
}

#[tokio::test]
async fn admit_refuses_a_calendar_that_does_not_exist_or_a_bad_bound() {
    let env = Env::start().await;
    let refused = handle(
        &env.clients.apis(),
        env.plan(json!({"calendars": ["no-such-calendar"]})),
    )
    .await
    .expect_err("refused");
    assert_eq!(refused.name().as_str(), "InvalidPlan");
    let message = refused.to_string();
    assert!(
        message
            .starts_with("freeze.calendars[0]: Change Calendar `no-such-calendar` does not exist"),
        "{message}"
    );

    let bound = handle(
        &env.clients.apis(),
        env.plan(json!({"maxFrozenSeconds": 5})),
    )
    .await
    .expect_err("refused");
    assert!(
        bound.to_string().contains("freeze.maxFrozenSeconds"),
        "{bound}"
    );

    let not_a_name = handle(&env.clients.apis(), env.plan(json!({"calendars": ["x y"]})))
        .await
        .expect_err("refused");
    assert!(
        not_a_name.to_string().contains("freeze.calendars[0]"),
        "{not_a_name}"
    );

    env.calendar("release-freeze", calendar("DEFAULT_OPEN", 3_600, 7_200))
        .await;
    let admitted = handle(
        &env.clients.apis(),
        env.plan(json!({"calendars": ["release-freeze"]})),
    )
    .await
    .expect("admitted");
    assert!(admitted["plan"].is_object());
    // Nothing was written: the switch is as the stack made it.
    let switch = env
        .ssm
        .get_parameter()
        .name(SWITCH)
        .send()
        .await
        .expect("switch");
    assert_eq!(
        switch.parameter().and_then(|p| p.value()),
        Some(r#"{"frozen": false}"#)
    );
}

/// An EKS issue opened, as the stack's `AwsHealthEvent` rule delivers it, in `region`.
fn eks_issue_in(region: &str) -> serde_json::Value {
    json!({"operation": "healthEvent", "detail": {
        "eventArn": "arn:aws:health:us-east-1::event/EKS/AWS_EKS_OPERATIONAL_ISSUE/AWS_EKS_OPERATIONAL_ISSUE_1",
        "service": "EKS", "eventTypeCode": "AWS_EKS_OPERATIONAL_ISSUE", "statusCode": "open",
        "eventRegion": region, "lastUpdatedTime": "Fri, 27 Nov 2026 06:10:00 GMT"}})
}

/// Nothing was recorded: Parameter Store holds the stack's switch only.
async fn nothing_recorded(env: &Env) {
    let written = env
        .ssm
        .get_parameters_by_path()
        .path("/")
        .recursive(true)
        .send()
        .await
        .expect("parameters");
    assert_eq!(
        written.parameters().len(),
        1,
        "the stack's switch only: {written:?}"
    );
}

#[tokio::test]
async fn a_malformed_aws_health_event_is_answered_as_refused_and_nothing_is_written() {
    // Answered, not a function error: Lambda would deliver the same event twice more.
    let env = Env::start().await;
    let answer = handle(&env.clients.apis(), eks_issue_in("us-east-99x"))
        .await
        .expect("answered");
    let refused = answer["refused"].as_str().unwrap_or_default();
    assert!(
        refused.contains("detail.eventRegion `us-east-99x` is not an AWS Region"),
        "{answer}"
    );
    nothing_recorded(&env).await;
}

#[tokio::test]
async fn an_aws_health_event_without_a_place_to_record_it_is_refused_by_name() {
    // A function deployed without HEALTH_PARAMETER_PATH (the template always sets it): the
    // event is refused, naming the variable, and nothing is written.
    let env = Env::start().await;
    let refused = handle(&env.clients.apis(), eks_issue_in("us-east-1"))
        .await
        .expect_err("refused");
    assert_eq!(refused.name().as_str(), "InvalidInput");
    assert!(
        refused
            .to_string()
            .contains("HEALTH_PARAMETER_PATH is not set"),
        "{refused}"
    );
    nothing_recorded(&env).await;
}

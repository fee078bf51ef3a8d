//! evaluate-alarms over the wire: alarms and metrics in moto, read back through the
//! function's real DescribeAlarms / GetMetricData paths.
//!
//! moto never evaluates alarms (new ones start OK), so states are driven with SetAlarmState.
//! moto computes Sum/Average/Minimum/Maximum/SampleCount but not percentiles, so the latency
//! checks here use `Maximum`; the p99 default is the same code path with another statistic.

use std::time::{Duration, SystemTime};

use aws_sdk_cloudwatch as cloudwatch;
use canary_core::NamedError;
use cloudwatch::types::{ComparisonOperator, Dimension, MetricDatum, StateValue, Statistic};
use cluster_canary_tests::{Moto, World};
use evaluate_alarms::{handle, AnalysisError, Apis, Clients};
use serde_json::{json, Value};

struct Env {
    moto: Option<Moto>,
    world: World,
    cw: cloudwatch::Client,
    /// The function's, as its `main.rs` builds them, with the alarm watches' table.
    clients: Clients,
    dynamodb: aws_sdk_dynamodb::Client,
}

const WATCH_TABLE: &str = "alarm-watches";

impl Env {
    async fn start() -> Env {
        let moto = Moto::start();
        let world = moto.seed();
        let config = moto.sdk_config().await;
        Env {
            moto: Some(moto),
            world,
            cw: cloudwatch::Client::new(&config),
            clients: Clients::from_config(&config, &|name| {
                (name == "ALARM_WATCH_TABLE").then(|| WATCH_TABLE.to_owned())
            }),
            dynamodb: aws_sdk_dynamodb::Client::new(&config),
        }
    }

    fn apis(&self) -> Apis<'_> {
        self.clients.apis()
    }

    fn plan(&self, analysis: Value) -> Value {
        json!({
            "cluster": {"name": "green", "region": "us-east-1"},
            "trafficTargets": [{"alb": {
                "listenerArn": self.world.listener,
                "stableTargetGroupArn": self.world.blue,
                "canaryTargetGroupArn": self.world.green,
            }}],
            "steps": [{"weight": 10}, {"weight": 100}],
            "bake": {"seconds": 120, "checkIntervalSeconds": 10},
            "analysis": analysis,
        })
    }

    async fn evaluate(&self, analysis: Value, progress: Value) -> Result<Value, AnalysisError> {
        handle(
            &self.apis(),
            json!({"operation": "evaluate", "plan": self.plan(analysis), "progress": progress}),
        )
        .await
    }

    /// The plan with `analysis`, admitted as the state machine's first state sends it (the
    /// execution's input as it came): what the answer says of the analysis.
    async fn validate(&self, analysis: Value) -> Result<Value, AnalysisError> {
        handle(&self.apis(), self.plan(analysis))
            .await
            .map(|admitted| admitted["analysis"].clone())
    }

    async fn alarm(&self, name: &str) {
        self.cw
            .put_metric_alarm()
            .alarm_name(name)
            .namespace("Shop")
            .metric_name("Errors")
            .statistic(Statistic::Sum)
            .period(60)
            .evaluation_periods(1)
            .threshold(1.0)
            .comparison_operator(ComparisonOperator::GreaterThanThreshold)
            .send()
            .await
            .expect("put alarm");
    }

    async fn set_state(&self, name: &str, state: StateValue, reason: &str) {
        self.cw
            .set_alarm_state()
            .alarm_name(name)
            .state_value(state)
            .state_reason(reason)
            .send()
            .await
            .expect("set alarm state");
    }

    /// ALB metrics of one target group, `per_minute` = (requests, 5xx, max latency), the last
    /// datapoint a minute ago.
    async fn alb_metrics(&self, target_group_arn: &str, per_minute: &[(f64, f64, f64)]) {
        let lb = self
            .world
            .listener
            .split_once(":listener/")
            .unwrap()
            .1
            .rsplit_once('/')
            .unwrap()
            .0
            .to_owned();
        let tg = target_group_arn.splitn(6, ':').nth(5).unwrap().to_owned();
        let dims = vec![
            Dimension::builder().name("LoadBalancer").value(lb).build(),
            Dimension::builder().name("TargetGroup").value(tg).build(),
        ];
        let now = SystemTime::now();
        let mut data = Vec::new();
        for (i, (requests, errors, latency)) in per_minute.iter().enumerate() {
            let at = now - Duration::from_secs(60 * (per_minute.len() - i) as u64);
            for (name, value) in [
                ("RequestCount", requests),
                ("HTTPCode_Target_5XX_Count", errors),
                ("TargetResponseTime", latency),
            ] {
                data.push(
                    MetricDatum::builder()
                        .metric_name(name)
                        .set_dimensions(Some(dims.clone()))
                        .timestamp(at.into())
                        .value(*value)
                        .build(),
                );
            }
        }
        self.cw
            .put_metric_data()
            .namespace("AWS/ApplicationELB")
            .set_metric_data(Some(data))
            .send()
            .await
            .expect("put metric data");
    }
}

fn reasons(out: &Value) -> Vec<String> {
    out["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn an_alarm_in_alarm_fails_the_check_and_says_why() {
    let env = Env::start().await;
    for name in ["api-5xx", "api-latency"] {
        env.alarm(name).await;
    }
    let analysis = json!({"alarms": {"names": ["api-5xx", "api-latency"]}});
    let out = env
        .evaluate(analysis.clone(), json!({}))
        .await
        .expect("evaluate");
    assert_eq!(
        (out["verdict"].as_str(), out["rollback"].as_bool()),
        (Some("pass"), Some(false)),
        "{out}"
    );
    assert_eq!(out["passes"], 1);

    env.set_state(
        "api-5xx",
        StateValue::Alarm,
        "Threshold Crossed: 1 datapoint [5.0] was greater than the threshold (1.0).",
    )
    .await;
    let out = env
        .evaluate(analysis, json!({"passes": 1}))
        .await
        .expect("evaluate");
    assert_eq!(
        (out["verdict"].as_str(), out["rollback"].as_bool()),
        (Some("fail"), Some(true)),
        "{out}"
    );
    assert_eq!(out["consecutiveFailures"], 1);
    let reasons = reasons(&out);
    let alarm_reason = reasons
        .iter()
        .find(|r| r.starts_with("alarm api-5xx is ALARM since "))
        .expect("reason");
    assert!(
        alarm_reason.ends_with(
            ": Threshold Crossed: 1 datapoint [5.0] was greater than the threshold (1.0)."
        ),
        "{alarm_reason}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.starts_with("alarm api-latency is OK since ")
                && r.ends_with(": Unchecked: Initial alarm creation")),
        "{reasons:?}"
    );
    assert!(reasons
        .last()
        .unwrap()
        .contains("reached the failure limit of 1"));
}

#[tokio::test]
async fn composite_alarms_are_watched_too() {
    let env = Env::start().await;
    env.alarm("checkout-errors").await;
    env.cw
        .put_composite_alarm()
        .alarm_name("checkout-slo")
        .alarm_rule("ALARM(\"checkout-errors\")")
        .send()
        .await
        .expect("put composite alarm (tests/moto/moto_server.py adds it to moto)");
    let analysis = json!({"alarms": {"names": ["checkout-slo"]}});
    let validated = env
        .validate(analysis.clone())
        .await
        .expect("a composite alarm exists for validate");
    assert_eq!(validated["alarms"], 1);

    env.set_state(
        "checkout-slo",
        StateValue::Alarm,
        "checkout-errors is in ALARM",
    )
    .await;
    let out = env.evaluate(analysis, json!({})).await.expect("evaluate");
    assert_eq!(out["verdict"], "fail", "{out}");
    assert!(
        reasons(&out)[0].starts_with("composite alarm checkout-slo is ALARM since "),
        "{out}"
    );
}

#[tokio::test]
async fn insufficient_data_follows_its_policy() {
    let env = Env::start().await;
    env.alarm("quiet").await;
    env.alarm("healthy").await;
    env.set_state("quiet", StateValue::InsufficientData, "no datapoints")
        .await;
    let cases = [
        (json!({"names": ["quiet", "healthy"]}), "inconclusive"),
        (
            json!({"names": ["quiet", "healthy"], "insufficientData": "fail"}),
            "fail",
        ),
        (
            json!({"names": ["quiet", "healthy"], "insufficientData": "ignore"}),
            "pass",
        ),
        (
            json!({"names": ["quiet"], "insufficientData": "ignore"}),
            "inconclusive",
        ),
    ];
    for (alarms, expected) in cases {
        let out = env
            .evaluate(json!({"alarms": alarms, "noEvidence": "pass"}), json!({}))
            .await
            .expect("evaluate");
        assert_eq!(out["verdict"], expected, "{alarms}: {out}");
    }
}

#[tokio::test]
async fn more_than_100_alarms_by_prefix_and_by_name() {
    let env = Env::start().await;
    let names: Vec<String> = (0..150).map(|i| format!("slo-{i:03}")).collect();
    for name in &names {
        env.alarm(name).await;
    }
    env.set_state("slo-137", StateValue::Alarm, "Threshold Crossed")
        .await;

    let by_prefix = json!({"alarms": {"prefixes": ["slo-"]}});
    assert_eq!(
        env.validate(by_prefix.clone()).await.expect("validate")["alarms"],
        150
    );
    let out = env.evaluate(by_prefix, json!({})).await.expect("evaluate");
    assert_eq!(out["verdict"], "fail");
    assert_eq!(
        out["counts"],
        json!({"pass": 149, "fail": 1, "inconclusive": 0, "ignored": 0})
    );
    assert!(
        reasons(&out)[0].starts_with("alarm slo-137 is ALARM"),
        "the failing alarm leads: {out}"
    );
    assert!(
        out.to_string().len() < 4096,
        "the verdict is bounded, not one line per alarm: {} bytes",
        out.to_string().len()
    );

    let by_name = json!({"alarms": {"names": names}});
    let out = env
        .evaluate(by_name, json!({}))
        .await
        .expect("names are sent 100 per call");
    assert_eq!(out["verdict"], "fail");
    assert!(reasons(&out)
        .iter()
        .any(|r| r.starts_with("alarm slo-137 is ALARM")));
}

#[tokio::test]
async fn canary_5xx_rate_over_its_limit_fails() {
    let env = Env::start().await;
    env.alb_metrics(&env.world.green, &[(500.0, 16.0, 0.2), (500.0, 16.0, 0.2)])
        .await;
    env.alb_metrics(&env.world.blue, &[(4500.0, 9.0, 0.2), (4500.0, 9.0, 0.2)])
        .await;
    let out = env
        .evaluate(json!({"alb": {"maxErrorRatePercent": 1, "maxErrorRateVsStable": 2, "latencyStatistic": "Maximum"}}), json!({}))
        .await
        .expect("evaluate");
    assert_eq!(out["verdict"], "fail", "{out}");
    assert_eq!(
        reasons(&out)[..2],
        [
            "green: canary 5xx rate 3.20 % > max 1 %",
            "green: canary 5xx rate 3.20 % > stable 0.20 % x 2"
        ]
    );
}

#[tokio::test]
async fn canary_latency_worse_than_stable_fails_and_a_healthy_canary_passes() {
    let env = Env::start().await;
    env.alb_metrics(&env.world.green, &[(100.0, 0.0, 0.3), (100.0, 0.0, 0.45)])
        .await;
    env.alb_metrics(&env.world.blue, &[(900.0, 0.0, 0.25), (900.0, 0.0, 0.25)])
        .await;
    let analysis = |factor: f64| json!({"alb": {"maxErrorRatePercent": 1, "maxLatencyVsStable": factor, "latencyStatistic": "Maximum"}});
    let out = env
        .evaluate(analysis(1.5), json!({}))
        .await
        .expect("evaluate");
    assert_eq!(out["verdict"], "fail", "{out}");
    assert!(
        reasons(&out)
            .contains(&"green: canary Maximum latency 0.450 s > stable 0.250 s x 1.5".to_owned()),
        "{out}"
    );

    let out = env
        .evaluate(analysis(2.0), json!({}))
        .await
        .expect("evaluate");
    assert_eq!(out["verdict"], "pass", "{out}");
}

#[tokio::test]
async fn a_user_metric_threshold_is_read_through_get_metric_data() {
    let env = Env::start().await;
    let now = SystemTime::now();
    let data: Vec<MetricDatum> = [(180, 0.3), (120, 0.9), (60, 0.4)]
        .iter()
        .map(|(ago, v)| {
            MetricDatum::builder()
                .metric_name("CheckoutLatency")
                .dimensions(Dimension::builder().name("Cluster").value("green").build())
                .timestamp((now - Duration::from_secs(*ago)).into())
                .value(*v)
                .build()
        })
        .collect();
    env.cw
        .put_metric_data()
        .namespace("Shop")
        .set_metric_data(Some(data))
        .send()
        .await
        .expect("put");
    let check = |reduce: &str| {
        json!({"metrics": [{
            "name": "checkout latency", "namespace": "Shop", "metricName": "CheckoutLatency",
            "dimensions": {"Cluster": "green"}, "stat": "Maximum", "periodSeconds": 60,
            "lookbackSeconds": 600, "reduce": reduce, "max": 0.8,
        }]})
    };
    let out = env
        .evaluate(check("max"), json!({}))
        .await
        .expect("evaluate");
    assert_eq!(out["verdict"], "fail", "{out}");
    assert_eq!(reasons(&out)[0], "checkout latency is 0.9 > max 0.8");
    let out = env
        .evaluate(check("latest"), json!({}))
        .await
        .expect("evaluate");
    assert_eq!(
        (out["verdict"].as_str(), reasons(&out)[0].as_str()),
        (Some("pass"), "checkout latency is 0.4, within limits")
    );
}

#[tokio::test]
async fn no_data_is_never_a_pass() {
    let env = Env::start().await;
    let analysis = json!({"alb": {"maxErrorRatePercent": 1, "maxLatencySeconds": 0.5, "latencyStatistic": "Maximum"}});
    let out = env
        .evaluate(analysis.clone(), json!({}))
        .await
        .expect("evaluate");
    assert_eq!(
        (out["verdict"].as_str(), out["rollback"].as_bool()),
        (Some("inconclusive"), Some(false)),
        "{out}"
    );
    assert!(
        reasons(&out)[0].contains("canary served 0 request(s) in the last 300 s"),
        "{out}"
    );
    assert!(
        reasons(&out)[1].contains("no datapoints for canary Maximum latency"),
        "{out}"
    );

    let out = env
        .evaluate(analysis, json!({"check": 12, "checks": 12}))
        .await
        .expect("evaluate");
    assert_eq!(
        out["rollback"], true,
        "the bake ended on no evidence: {out}"
    );
}

#[tokio::test]
async fn the_first_state_gets_the_plan_back_as_the_execution_was_given_it() {
    let env = Env::start().await;
    env.alarm("api-5xx").await;
    let plan = env.plan(json!({"alarms": {"names": ["api-5xx"]}}));
    let admitted = handle(&env.apis(), plan.clone()).await.expect("admitted");
    assert_eq!(
        admitted,
        json!({"plan": plan, "analysis": {"alarms": 1, "metricQueries": 0}})
    );
}

#[tokio::test]
async fn validate_refuses_alarms_that_do_not_exist() {
    let env = Env::start().await;
    env.alarm("api-5xx").await;
    let cases = [
        (
            json!({"alarms": {"names": ["api-5xx", "api-5xxx"]}}),
            "analysis.alarms.names[1]: there is no metric or composite alarm named `api-5xxx`",
        ),
        (
            json!({"alarms": {"prefixes": ["green-"]}}),
            "analysis.alarms.prefixes[0]: no metric or composite alarm name starts with `green-`",
        ),
    ];
    for (analysis, message) in cases {
        let err = env.validate(analysis).await.expect_err("must refuse");
        assert_eq!(err.name().as_str(), "AlarmNotFound");
        assert_eq!(err.to_string(), message);
    }
    let err = env
        .validate(
            json!({"metrics": [{"name": "x", "namespace": "Shop", "metricName": "X", "stat": "Sum",
            "periodSeconds": 300, "lookbackSeconds": 60, "max": 1}]}),
        )
        .await
        .expect_err("lookback shorter than period");
    assert_eq!(err.name().as_str(), "InvalidPlan");
    assert!(
        err.to_string().contains(
            "analysis.metrics[0].lookbackSeconds: 60 s is shorter than the metric period (300 s)"
        ),
        "{err}"
    );
    let ok = env
        .validate(json!({"alarms": {"names": ["api-5xx"]}, "alb": {"maxErrorRatePercent": 1}}))
        .await
        .expect("valid");
    assert_eq!(ok, json!({"alarms": 1, "metricQueries": 6}));
}

#[tokio::test]
async fn a_cloudwatch_outage_is_an_error_not_a_pass() {
    let mut env = Env::start().await;
    env.alarm("api-5xx").await;
    drop(env.moto.take()); // CloudWatch is gone.
    let err = env
        .evaluate(json!({"alarms": {"names": ["api-5xx"]}}), json!({}))
        .await
        .expect_err("no answer");
    assert_eq!(err.name().as_str(), "AwsTransient", "{err}");
    assert!(err.to_string().contains("DescribeAlarms failed"), "{err}");
}

#[tokio::test]
async fn validate_refuses_more_alarms_than_the_limit_and_accepts_the_limit() {
    use canary_core::limits::MAX_ALARMS;
    let env = Env::start().await;
    for i in 0..MAX_ALARMS {
        env.alarm(&format!("fleet-{i:03}")).await;
    }
    let at_cap = env
        .validate(json!({"alarms": {"prefixes": ["fleet-"]}}))
        .await
        .expect("the limit itself is fine");
    assert_eq!(at_cap["alarms"], MAX_ALARMS);
    env.alarm("fleet-extra").await;
    let err = env
        .validate(json!({"alarms": {"prefixes": ["fleet-"]}}))
        .await
        .expect_err("one over the limit");
    assert_eq!(err.name().as_str(), "InvalidPlan");
    assert_eq!(
        err.to_string(),
        format!(
            "analysis.alarms: the names and prefixes match {} alarms, more than the limit of {MAX_ALARMS}; \
             use narrower prefixes or a composite alarm",
            MAX_ALARMS + 1
        )
    );
}

#[tokio::test]
async fn await_approval_only_says_it_waits_and_refuses_a_missing_token() {
    let env = Env::start().await;
    let call = |token: Option<&str>| {
        let mut input = json!({
            "operation": "awaitApproval",
            "executionArn": "arn:aws:states:us-east-1:123456789012:execution:rollout:x",
            "step": {"number": 3, "count": 3, "weight": 100},
        });
        if let Some(token) = token {
            input["taskToken"] = json!(token);
        }
        let apis = env.apis();
        async move { handle(&apis, input).await }
    };
    let out = call(Some("secret-token")).await.expect("waits");
    assert_eq!(out, json!({"waiting": true}), "the token is not echoed");
    for (token, says) in [
        (Some(""), "taskToken is empty"),
        (None, "missing field `taskToken`"),
    ] {
        let err = call(token).await.expect_err("no token");
        assert_eq!(err.name().as_str(), "InvalidInput");
        assert!(err.to_string().contains(says), "{err}");
    }
}

/// The table as template.yaml's AlarmWatchTable defines it (`watchKey` + `executionArn`).
async fn create_watch_table(env: &Env) {
    use aws_sdk_dynamodb::types::{
        AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
    };
    let attribute = |name: &str| {
        AttributeDefinition::builder()
            .attribute_name(name)
            .attribute_type(ScalarAttributeType::S)
            .build()
            .unwrap()
    };
    let key = |name: &str, kind| {
        KeySchemaElement::builder()
            .attribute_name(name)
            .key_type(kind)
            .build()
            .unwrap()
    };
    env.dynamodb
        .create_table()
        .table_name(WATCH_TABLE)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(attribute("watchKey"))
        .attribute_definitions(attribute("executionArn"))
        .key_schema(key("watchKey", KeyType::Hash))
        .key_schema(key("executionArn", KeyType::Range))
        .send()
        .await
        .expect("table");
}

async fn watch_items(env: &Env) -> usize {
    let scan = env
        .dynamodb
        .scan()
        .table_name(WATCH_TABLE)
        .send()
        .await
        .unwrap();
    scan.items().len()
}

#[tokio::test]
async fn an_alarm_event_for_a_rollout_no_longer_waiting_changes_nothing_and_drops_its_watch() {
    let env = Env::start().await;
    create_watch_table(&env).await;
    let execution = "arn:aws:states:us-east-1:123456789012:execution:rollout:green";
    let plan = env.plan(json!({"alarms": {"names": ["api-5xx"]}}));
    let watch = |token: &str| {
        json!({
            "operation": "watchAlarms", "taskToken": token, "executionArn": execution,
            "executionStart": "2026-01-01T00:00:00.000Z", "during": "bake", "plan": plan,
            "step": {"weight": 50, "checks": 3, "checkIntervalSeconds": 60},
        })
    };
    let apis = env.apis();
    let out = handle(&apis, watch("token-1")).await.expect("registers");
    assert_eq!(out, json!({"watching": true}), "the token is not echoed");
    // The next bake's watch replaces the execution's last one.
    handle(&apis, watch("token-2")).await.expect("registers");
    assert_eq!(watch_items(&env).await, 1);

    let change = |name: &str| {
        json!({"operation": "alarmStateChange", "change": {
            "alarmName": name, "state": "ALARM", "reason": "Threshold Crossed",
            "time": "2026-11-23T20:00:00Z", "account": "123456789012", "region": "us-east-1"}})
    };
    let unrelated = handle(&apis, change("other-alarm")).await.expect("ignored");
    assert_eq!(
        unrelated["unrelated"], 0,
        "an alarm no watch names reads no watch (no scan of the table): {unrelated}"
    );
    assert!(unrelated["failed"].as_array().unwrap().is_empty());
    assert_eq!(
        watch_items(&env).await,
        1,
        "an unrelated alarm leaves the watch"
    );

    // Step Functions no longer knows the token (the task ended): nothing fails, the watch goes.
    let gone = handle(&apis, change("api-5xx")).await.expect("answered");
    assert_eq!(gone["noLongerWaiting"], json!([execution]), "{gone}");
    assert!(gone["failed"].as_array().unwrap().is_empty());
    assert_eq!(watch_items(&env).await, 0);

    let bad = handle(
        &apis,
        json!({"operation": "alarmStateChange", "change": {
        "alarmName": "api-5xx", "state": "ALARM", "time": "soon",
        "account": "123456789012", "region": "us-east-1"}}),
    )
    .await
    .expect_err("refused");
    assert_eq!(bad.name().as_str(), "InvalidInput");
    assert!(bad.to_string().contains("not a UTC time"), "{bad}");
}

/// An alarm event reads the watches that name it and those watching prefixes, nothing else:
/// a rollout watching other names is never read.
#[tokio::test]
async fn an_alarm_event_reads_only_the_watches_that_name_it_and_the_prefix_watches() {
    let env = Env::start().await;
    create_watch_table(&env).await;
    let apis = env.apis();
    let register = |execution: &str, token: &str, alarms: Value| {
        let plan = env.plan(json!({ "alarms": alarms }));
        let input = json!({
            "operation": "watchAlarms", "taskToken": token,
            "executionArn": format!("arn:aws:states:us-east-1:123456789012:execution:rollout:{execution}"),
            "executionStart": "2026-01-01T00:00:00.000Z", "during": "bake", "plan": plan,
            "step": {"weight": 50, "checks": 3, "checkIntervalSeconds": 60},
        });
        let apis = env.apis();
        async move { handle(&apis, input).await.expect("registers") }
    };
    env.alarm("api-5xx").await;
    env.alarm("api-latency").await;
    env.alarm("shop-errors").await;
    register("a", "token-a", json!({"names": ["api-5xx", "api-latency"]})).await;
    register("b", "token-b", json!({"prefixes": ["shop-"]})).await;
    assert_eq!(
        watch_items(&env).await,
        3,
        "a under each of its names, b under prefixes"
    );

    let change = |name: &str| {
        json!({"operation": "alarmStateChange", "change": {
            "alarmName": name, "state": "ALARM", "reason": "Threshold Crossed",
            "time": "2026-11-23T20:00:00Z", "account": "123456789012", "region": "us-east-1"}})
    };
    let other = handle(&apis, change("billing-alarm"))
        .await
        .expect("ignored");
    assert_eq!(
        other["unrelated"], 1,
        "only the prefix watch is read: {other}"
    );
    let named = handle(&apis, change("api-latency"))
        .await
        .expect("answered");
    assert_eq!(named["unrelated"], 1, "a, and the prefix watch: {named}");
    assert_eq!(
        named["noLongerWaiting"],
        json!(["arn:aws:states:us-east-1:123456789012:execution:rollout:a"]),
        "{named}"
    );
    assert_eq!(
        watch_items(&env).await,
        1,
        "a's watch is gone under every key"
    );
}

/// Every check reads where traffic is: a listener a controller (or a person) put back under the
/// bake is `WeightsChangedExternally`, named, at that check, not a pass on traffic that is not
/// where the rollout says.
#[tokio::test]
async fn a_check_whose_target_moved_stops_the_rollout_at_that_check() {
    let env = Env::start().await;
    let config = env.moto.as_ref().expect("moto").sdk_config().await;
    let observer = cluster_canary_tests::Observer::new(&config);
    let weights = observer.listener_weights(&env.world.listener).await;
    let weight_of = |arn: &str| {
        weights
            .iter()
            .find(|(tg, _)| tg == arn)
            .map_or(0, |(_, w)| *w)
    };
    let (blue, green) = (weight_of(&env.world.blue), weight_of(&env.world.green));
    let check = |stable: i32, canary: i32| {
        let plan = env.plan(json!({"alarms": {"names": ["api-5xx"]}}));
        let expected = json!([{"target": env.world.listener, "stable": stable, "canary": canary}]);
        let apis = env.apis();
        async move {
            handle(
                &apis,
                json!({"operation": "evaluate", "plan": plan, "progress": {}, "expected": expected}),
            )
            .await
        }
    };
    env.alarm("api-5xx").await;

    let where_it_was_set = check(blue, green).await.expect("traffic where it was set");
    assert_eq!(where_it_was_set["verdict"], "pass", "{where_it_was_set}");

    let moved = check(50, 50)
        .await
        .expect_err("the listener is not at 50/50");
    assert_eq!(moved.name().as_str(), "WeightsChangedExternally");
    let message = moved.to_string();
    assert!(message.contains(&env.world.listener), "{message}");
    assert!(
        message.contains(&format!(
            "found stable {blue} / canary {green}, this rollout last set stable 50 / canary 50"
        )),
        "{message}"
    );

    // A check that rolls back does so wherever traffic is: the restore puts the baseline back
    // (and reports what it overwrote); stopping would leave a failing canary its traffic.
    env.set_state("api-5xx", StateValue::Alarm, "Threshold Crossed")
        .await;
    let failing = check(50, 50).await.expect("a rollback verdict");
    assert_eq!(failing["rollback"], true, "{failing}");
}

/// The comparison's evidence as the state machine carries it: each check's answer holds the
/// text the next check is given; a check given the same evidence again (a retry) takes no period
/// in twice; evidence that is not a check's is refused, and nothing is judged.
#[tokio::test]
async fn the_comparison_carries_its_evidence_from_check_to_check() {
    let env = Env::start().await;
    // 12 minutes of 5xx: the canary 3 errors in 100 requests, the baseline 9 in 900 (3 times
    // the rate).
    env.alb_metrics(&env.world.green, &[(100.0, 3.0, 0.1); 12])
        .await;
    env.alb_metrics(&env.world.blue, &[(900.0, 9.0, 0.1); 12])
        .await;
    // The first step's bake (120 s) and its extension hold minSamples minute-long periods.
    let analysis = json!({"extendBakeSeconds": 600,
        "compare": {"periodSeconds": 60, "lookbackSeconds": 1200, "minSamples": 5,
        "metrics": [{"name": "5xx rate", "alb": "errorRate"}]}});
    let apis = env.apis();
    let check = |evidence: Value| {
        handle(
            &apis,
            json!({"operation": "evaluate", "plan": env.plan(analysis.clone()),
                   "progress": {"check": 1, "checks": 3}, "evidence": evidence}),
        )
    };
    let first = check(json!("")).await.expect("evaluate");
    assert_eq!(first["verdict"], "fail", "{first}");
    let text = first["evidence"].as_str().expect("evidence text");
    let carried: Value = serde_json::from_str(text).expect("JSON");
    assert_eq!(carried[0]["metric"], 0, "{carried}");
    assert!(carried[0]["through"].as_i64().is_some(), "{carried}");
    assert!(
        reasons(&first)[0].starts_with(
            "compare 5xx rate: High (check Fail at score 0): canary 3 vs baseline 1 (x3)"
        ),
        "{first}"
    );
    // The same check again: nothing newer to take in, the same evidence out.
    let again = check(json!(text)).await.expect("evaluate");
    assert_eq!(again["evidence"], first["evidence"]);
    assert_eq!(
        again["verdict"], "fail",
        "a regression once shown stays shown"
    );

    let refused = check(json!("{\"not\": \"evidence\"}"))
        .await
        .expect_err("not a check's evidence");
    assert_eq!(refused.name().as_str(), "InvalidInput");
    assert!(
        refused
            .to_string()
            .contains("the comparison's evidence is not what a check writes"),
        "{refused}"
    );
}

//! evaluate-alarms' Datadog checks against the Datadog API test double
//! (`tests/datadog/datadog_api_server.py`: it refuses missing or wrong keys, bad requests and
//! queries, and rate-limits as Datadog does), the keys read from a Secrets Manager secret in
//! moto through the real SDK: `validate` at Prepare and `evaluate` at a check, through `handle`.

use aws_sdk_secretsmanager as secretsmanager;
use canary_core::NamedError;
use cluster_canary_tests::datadog::DatadogServer;
use cluster_canary_tests::Moto;
use evaluate_alarms::{handle, AnalysisError, Clients};
use serde_json::{json, Value};

const API_KEY: &str = "dd-api-key-for-tests-0123456789abcdef";
const APP_KEY: &str = "dd-app-key-for-tests-fedcba9876543210";
const ERRORS: &str = "sum:trace.http.request.errors{kube_cluster_name:{{cluster}}}.as_count()";

struct Env {
    _moto: Moto,
    clients: Clients,
}

impl Env {
    /// The function's clients, its Datadog keys in a secret holding `secret`, its Datadog API
    /// at `server` (`DATADOG_API_URL`). `secret` None: no `DATADOG_SECRET_ARN`.
    async fn new(server: &DatadogServer, secret: Option<&str>) -> Env {
        let moto = Moto::start();
        let config = moto.sdk_config().await;
        let secret_arn = match secret {
            Some(text) => Some(
                secretsmanager::Client::new(&config)
                    .create_secret()
                    .name("datadog-keys")
                    .secret_string(text)
                    .send()
                    .await
                    .expect("a secret in moto")
                    .arn
                    .expect("its ARN"),
            ),
            None => None,
        };
        let url = server.url.clone();
        let env = |name: &str| match name {
            "DATADOG_SECRET_ARN" => secret_arn.clone(),
            "DATADOG_API_URL" => Some(url.clone()),
            _ => None,
        };
        Env {
            clients: Clients::from_config(&config, &env),
            _moto: moto,
        }
    }

    async fn validate(&self, datadog: Value) -> Result<Value, AnalysisError> {
        handle(&self.clients.apis(), plan(datadog))
            .await
            .map(|admitted| admitted["analysis"].clone())
    }

    async fn evaluate(&self, datadog: Value) -> Result<Value, AnalysisError> {
        self.evaluate_unjudged_since(datadog, 0).await
    }

    /// A check of a bake whose checks (10 s apart) have gone unjudged since `since` (epoch
    /// seconds; 0: judged so far).
    async fn evaluate_unjudged_since(
        &self,
        datadog: Value,
        since: u64,
    ) -> Result<Value, AnalysisError> {
        let progress = json!({"consecutiveFailures": 0, "passes": 0, "check": 1, "checks": 3,
                              "unjudgedSince": since, "checkIntervalSeconds": 10});
        handle(
            &self.clients.apis(),
            json!({"operation": "evaluate", "plan": plan(datadog), "progress": progress}),
        )
        .await
    }
}

fn plan(datadog: Value) -> Value {
    json!({
        "cluster": {"name": "green", "region": "us-east-1"},
        "trafficTargets": [{"alb": {
            "listenerArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/shop/50dc6c495c0c9188/f2f7dc8efc522ab2",
            "stableTargetGroupArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/blue/73e2d6bc24d8a067",
            "canaryTargetGroupArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/green/8ad1c3f2b5e0d4a7",
        }}],
        "steps": [{"weight": 10}, {"weight": 100}],
        "bake": {"seconds": 120, "checkIntervalSeconds": 10},
        "analysis": {"datadog": datadog},
    })
}

fn keys() -> String {
    json!({"apiKey": API_KEY, "appKey": APP_KEY}).to_string()
}

fn errors_server(extra: &[&str]) -> DatadogServer {
    let values = json!({
        "trace.http.request.errors{kube_cluster_name:green}": 12.0,
        "trace.http.request.errors{kube_cluster_name:blue}": 1.0,
    });
    DatadogServer::start(API_KEY, APP_KEY, &values, extra)
}

fn section(query: &str, limits: Value) -> Value {
    let mut check = json!({"name": "canary errors", "query": query, "aggregator": "sum"});
    check
        .as_object_mut()
        .expect("an object")
        .extend(limits.as_object().expect("limits").clone());
    json!({"site": "datadoghq.eu", "checks": [check]})
}

#[tokio::test]
async fn a_canary_over_its_limit_fails_the_check_and_one_within_passes() {
    let server = errors_server(&[]);
    let env = Env::new(&server, Some(&keys())).await;
    env.validate(section(ERRORS, json!({"max": 5})))
        .await
        .unwrap();

    let failing = env
        .evaluate(section(ERRORS, json!({"max": 5})))
        .await
        .unwrap();
    assert_eq!(failing["verdict"], "fail", "{failing}");
    assert_eq!(failing["rollback"], true);
    assert_eq!(failing["reasons"][0], "datadog canary errors is 12 > max 5");

    let passing = env
        .evaluate(section(ERRORS, json!({"max": 50})))
        .await
        .unwrap();
    assert_eq!(passing["verdict"], "pass", "{passing}");
    assert_eq!(
        passing["reasons"][0],
        "datadog canary errors is 12, within limits"
    );
}

#[tokio::test]
async fn the_canary_compared_with_the_stable_cluster_by_its_stable_query() {
    let server = errors_server(&[]);
    let env = Env::new(&server, Some(&keys())).await;
    let section = |factor: f64| {
        json!({"checks": [{"name": "canary errors", "query": ERRORS, "aggregator": "sum",
            "stableQuery": "sum:trace.http.request.errors{kube_cluster_name:blue}.as_count()",
            "maxVsStable": factor, "vsStableFloor": 3}]})
    };
    env.validate(section(5.0)).await.unwrap();
    let worse = env.evaluate(section(5.0)).await.unwrap();
    assert_eq!(worse["verdict"], "fail", "{worse}");
    assert_eq!(
        worse["reasons"][0],
        "datadog canary errors is 12 > 5 x stable 1"
    );
    let tolerated = env.evaluate(section(20.0)).await.unwrap();
    assert_eq!(tolerated["verdict"], "pass", "{tolerated}");
}

#[tokio::test]
async fn wrong_or_missing_keys_are_refused_naming_neither_key() {
    let server = errors_server(&[]);
    let wrong = json!({"apiKey": API_KEY, "appKey": "not-the-app-key"}).to_string();
    let cases = [
        (Some(wrong.as_str()), "refused the keys (403): Forbidden"),
        (
            Some("not json, and secret"),
            "must be a JSON object with string fields apiKey and appKey",
        ),
        (None, "DATADOG_SECRET_ARN is not set"),
    ];
    for (secret, expected) in cases {
        let env = Env::new(&server, secret).await;
        let error = env
            .validate(section(ERRORS, json!({"max": 5})))
            .await
            .unwrap_err();
        assert_eq!(error.name().as_str(), "MetricsProviderRefused", "{error}");
        let text = error.to_string();
        assert!(
            text.starts_with("analysis.datadog.checks[0].query: "),
            "{text}"
        );
        assert!(text.contains(expected), "{text}");
        for secret in [API_KEY, APP_KEY, "not-the-app-key", "not json, and secret"] {
            assert!(!text.contains(secret), "the error shows a key: {text}");
        }
    }
}

#[tokio::test]
async fn queries_datadog_rejects_or_a_check_cannot_judge_are_refused_naming_the_check() {
    let server = errors_server(&[]);
    let env = Env::new(&server, Some(&keys())).await;
    let cases = [
        ("trace.http.request.errors", "Error parsing query"),
        (
            "sum:trace.http.request.errors{*}.as_count() by {kube_cluster_name}",
            "returned 2 values (one per group)",
        ),
        (
            "sum:trace.http.request.errors{kube_cluster_name:nowhere}",
            "gives no data now",
        ),
    ];
    for (query, expected) in cases {
        let error = env
            .validate(section(query, json!({"max": 5})))
            .await
            .unwrap_err();
        assert_eq!(error.name().as_str(), "InvalidPlan", "{error}");
        let text = error.to_string();
        assert!(
            text.starts_with("analysis.datadog.checks[0].query: ") && text.contains(expected),
            "{query}: {text}"
        );
    }
    // At a check, no data is inconclusive, never a pass.
    let nowhere = section(
        "sum:trace.http.request.errors{kube_cluster_name:nowhere}",
        json!({"max": 5}),
    );
    let decision = env.evaluate(nowhere).await.unwrap();
    assert_eq!(decision["verdict"], "inconclusive", "{decision}");
    assert_eq!(
        decision["reasons"][0],
        "datadog canary errors: no data in the last 300 s"
    );
}

#[tokio::test]
async fn a_rate_limited_query_waits_for_the_reset_datadog_gives() {
    // One query per 2 s window: the second check's query is answered 429 first.
    let server = errors_server(&["--rate-limit", "1", "--rate-period", "2"]);
    let env = Env::new(&server, Some(&keys())).await;
    let two = json!({"site": "datadoghq.com", "checks": [
        {"name": "canary errors", "query": ERRORS, "aggregator": "sum", "max": 50},
        {"name": "stable errors", "query": "sum:trace.http.request.errors{kube_cluster_name:blue}.as_count()", "aggregator": "sum", "max": 50},
    ]});
    let decision = env.evaluate(two).await.unwrap();
    assert_eq!(decision["counts"]["pass"], 2, "{decision}");
    let seen = server.requests();
    assert!(seen["limited"].as_u64().unwrap() >= 1, "{seen}");
}

#[tokio::test]
async fn a_rate_limit_that_outlasts_the_wait_leaves_the_check_unjudged_then_rolls_back() {
    // The window resets in 60 s: longer than a check waits.
    let server = errors_server(&["--rate-limit", "0", "--rate-period", "60"]);
    let env = Env::new(&server, Some(&keys())).await;
    let decision = env
        .evaluate(section(ERRORS, json!({"max": 5})))
        .await
        .expect("unjudged, not an error yet");
    assert_eq!(decision["verdict"], "inconclusive", "{decision}");
    assert!(
        decision["summary"]
            .as_str()
            .unwrap()
            .contains("rate limited, the limit resets in"),
        "{decision}"
    );
    let since = decision["unjudgedSince"].as_u64().expect("since");
    let asked = server.requests()["requests"].clone();
    let error = env
        .evaluate_unjudged_since(section(ERRORS, json!({"max": 5})), since - 30)
        .await
        .unwrap_err();
    assert_eq!(
        error.name().as_str(),
        "MetricsProviderUnavailable",
        "{error}"
    );
    // Past the bound the check fails before asking again (the unjudged checks said why). The
    // seconds gone are 30 and however long the first check took: the bound is what it names.
    let said = error.to_string();
    let gone = said
        .strip_prefix(
            "analysis.datadog: the metrics provider left the checks unanswered: the canary has gone ",
        )
        .and_then(|rest| rest.split_once(" s without a verdict, past analysis.maxUnjudgedSeconds (30 s)"))
        .and_then(|(seconds, _)| seconds.parse::<u64>().ok());
    assert!(gone.is_some_and(|s| (30..60).contains(&s)), "{error}");
    assert_eq!(
        server.requests()["requests"],
        asked,
        "not asked again past the bound"
    );
}

/// Each cluster's p99 latency in Datadog, point by point on the same spread: green's `factor`
/// times blue's.
fn latency_server(factor: f64) -> DatadogServer {
    let spread = [1.0, 0.93, 1.05, 0.97, 1.1, 0.95, 1.02, 0.91];
    let side = |factor: f64, phase: usize| -> Vec<f64> {
        (0..8)
            .map(|i| 0.1 * factor * spread[(i + phase) % 8])
            .collect()
    };
    let values = json!({
        "trace.http.request.duration.by.service.99p{kube_cluster_name:blue}": side(1.0, 0),
        "trace.http.request.duration.by.service.99p{kube_cluster_name:green}": side(factor, 4),
    });
    DatadogServer::start(API_KEY, APP_KEY, &values, &[])
}

const P99: &str = "avg:trace.http.request.duration.by.service.99p{kube_cluster_name:{{cluster}}}";

impl Env {
    /// A check of a plan whose analysis is `analysis` (Datadog's site and a comparison).
    async fn evaluate_analysis(&self, analysis: Value) -> Result<Value, AnalysisError> {
        let mut plan = plan(json!(null));
        plan["analysis"] = analysis;
        let progress = json!({"consecutiveFailures": 0, "passes": 0, "check": 1, "checks": 3,
                              "unjudgedSince": 0, "checkIntervalSeconds": 10});
        handle(
            &self.clients.apis(),
            json!({"operation": "evaluate", "plan": plan, "progress": progress}),
        )
        .await
    }
}

fn comparison(query: &str) -> Value {
    json!({
        "datadog": {"site": "datadoghq.eu"},
        // The first step's bake (120 s) and its extension hold minSamples minute-long periods.
        "extendBakeSeconds": 600,
        "compare": {"periodSeconds": 60, "lookbackSeconds": 1200, "minSamples": 8, "metrics": [
            {"name": "p99 latency", "datadog": {"query": query, "baseline": "blue"}}]},
    })
}

#[tokio::test]
async fn a_canary_slower_than_its_baseline_in_datadog_fails_the_comparison() {
    let server = latency_server(1.5);
    let env = Env::new(&server, Some(&keys())).await;
    let failing = env.evaluate_analysis(comparison(P99)).await.unwrap();
    assert_eq!(failing["verdict"], "fail", "{failing}");
    let reason = failing["reasons"][0].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("compare p99 latency: High (check Fail at score 0): canary 0.1"),
        "{reason}"
    );
    assert!(reason.contains("(20 periods)"), "{reason}");
    // The same canary as its baseline passes.
    let server = latency_server(1.0);
    let env = Env::new(&server, Some(&keys())).await;
    let passing = env.evaluate_analysis(comparison(P99)).await.unwrap();
    assert_eq!(passing["verdict"], "pass", "{passing}");
}

#[tokio::test]
async fn a_datadog_comparison_query_giving_a_series_per_group_is_refused_at_prepare() {
    let server = latency_server(1.0);
    let env = Env::new(&server, Some(&keys())).await;
    let mut plan = plan(json!(null));
    plan["analysis"] = comparison(
        "avg:trace.http.request.duration.by.service.99p{kube_cluster_name:{{cluster}}} by {kube_cluster_name}",
    );
    let refused = handle(&env.clients.apis(), plan)
        .await
        .expect_err("a series per group");
    assert_eq!(refused.name(), canary_core::ErrorName::InvalidPlan);
    assert!(
        refused.to_string().starts_with(
            "analysis.compare.metrics[0].datadog: canary: returned 2 series (one per group)"
        ),
        "{refused}"
    );
}

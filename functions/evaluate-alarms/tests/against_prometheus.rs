//! evaluate-alarms' Prometheus checks against a real Prometheus server (Debian's package),
//! its TSDB backfilled with the samples each test gives, queried at the time the function
//! queries (now): `validate` at Prepare and `evaluate` at a check, through `handle`.
//!
//! The AWS clients point at a closed loopback port: these plans have no CloudWatch checks,
//! so a call to one would fail the test.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener};
use std::time::{SystemTime, UNIX_EPOCH};

use canary_core::NamedError;
use cluster_canary_tests::prometheus::PrometheusServer;
use evaluate_alarms::{handle, AnalysisError, Clients};
use serde_json::{json, Value};

/// The function's clients, as its `main.rs` builds them (no alarm watch table, no Datadog).
struct Env {
    clients: Clients,
}

impl Env {
    async fn new() -> Env {
        let config = canary_aws::sdk_config_loader()
            .endpoint_url("http://127.0.0.1:9")
            .region(aws_config::Region::new("us-east-1"))
            .credentials_provider(aws_credential_types::Credentials::new(
                "test", "test", None, None, "tests",
            ))
            .load()
            .await;
        Env {
            clients: Clients::from_config(&config, &|_| None),
        }
    }

    async fn validate(&self, prometheus: Value) -> Result<Value, AnalysisError> {
        handle(&self.clients.apis(), plan(prometheus))
            .await
            .map(|admitted| admitted["analysis"].clone())
    }

    async fn evaluate(&self, prometheus: Value) -> Result<Value, AnalysisError> {
        self.evaluate_unjudged_since(prometheus, 0).await
    }

    /// A check of a bake whose checks (10 s apart) have gone unjudged since `since` (epoch
    /// seconds; 0: judged so far).
    async fn evaluate_unjudged_since(
        &self,
        prometheus: Value,
        since: u64,
    ) -> Result<Value, AnalysisError> {
        let progress = json!({"consecutiveFailures": 0, "passes": 0, "check": 1, "checks": 3,
                              "unjudgedSince": since, "checkIntervalSeconds": 10});
        handle(
            &self.clients.apis(),
            json!({"operation": "evaluate", "plan": plan(prometheus), "progress": progress}),
        )
        .await
    }
}

fn plan(prometheus: Value) -> Value {
    json!({
        "cluster": {"name": "green", "region": "us-east-1"},
        "trafficTargets": [{"alb": {
            "listenerArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/shop/50dc6c495c0c9188/f2f7dc8efc522ab2",
            "stableTargetGroupArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/blue/73e2d6bc24d8a067",
            "canaryTargetGroupArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/green/8ad1c3f2b5e0d4a7",
        }}],
        "steps": [{"weight": 10}, {"weight": 100}],
        "bake": {"seconds": 120, "checkIntervalSeconds": 10},
        "analysis": {"prometheus": prometheus},
    })
}

/// The error ratio of each cluster over the last minute: green's is twenty times blue's.
fn error_ratios() -> PrometheusServer {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_secs();
    let mut samples = String::from("# TYPE canary_error_ratio gauge\n");
    for ago in [60, 30, 5] {
        let at = now - ago;
        samples.push_str(&format!(
            "canary_error_ratio{{cluster=\"green\"}} 0.2 {at}\n"
        ));
        samples.push_str(&format!(
            "canary_error_ratio{{cluster=\"blue\"}} 0.01 {at}\n"
        ));
    }
    samples.push_str("# EOF\n");
    PrometheusServer::start(&samples)
}

fn check(query: &str, limits: Value) -> Value {
    let mut check = json!({"name": "5xx ratio", "query": query});
    check
        .as_object_mut()
        .expect("an object")
        .extend(limits.as_object().expect("limits").clone());
    check
}

const GREEN: &str = "max(canary_error_ratio{cluster=\"{{cluster}}\"})";

#[tokio::test]
async fn a_canary_over_its_limit_fails_the_check_and_one_within_passes() {
    let (prometheus, env) = (error_ratios(), Env::new().await);
    let section = |limits| json!({"url": prometheus.url, "checks": [check(GREEN, limits)]});

    let found = env.validate(section(json!({"max": 0.05}))).await.unwrap();
    assert_eq!(found["metricQueries"], 1);

    let failing = env.evaluate(section(json!({"max": 0.05}))).await.unwrap();
    assert_eq!(failing["verdict"], "fail", "{failing}");
    assert_eq!(failing["rollback"], true);
    assert_eq!(
        failing["reasons"][0],
        "prometheus 5xx ratio is 0.2 > max 0.05"
    );

    let passing = env.evaluate(section(json!({"max": 0.5}))).await.unwrap();
    assert_eq!(passing["verdict"], "pass", "{passing}");
    assert_eq!(
        passing["reasons"][0],
        "prometheus 5xx ratio is 0.2, within limits"
    );
}

#[tokio::test]
async fn canary_against_stable_and_scalar_answers() {
    let (prometheus, env) = (error_ratios(), Env::new().await);
    // The canary's error ratio may be at most twice the stable cluster's.
    let versus = "max(canary_error_ratio{cluster=\"{{cluster}}\"}) / max(canary_error_ratio{cluster=\"blue\"})";
    let scalar = "scalar(max(canary_error_ratio{cluster=\"blue\"}))";
    let section = json!({"url": prometheus.url, "checks": [
        check(versus, json!({"max": 2})),
        {"name": "stable ratio", "query": scalar, "max": 0.05},
    ]});
    env.validate(section.clone()).await.unwrap();
    let decision = env.evaluate(section).await.unwrap();
    assert_eq!(decision["counts"]["fail"], 1, "{decision}");
    assert_eq!(decision["counts"]["pass"], 1, "{decision}");
    assert_eq!(decision["reasons"][0], "prometheus 5xx ratio is 20 > max 2");
    assert_eq!(
        decision["reasons"][1],
        "prometheus stable ratio is 0.01, within limits"
    );
}

#[tokio::test]
async fn the_canary_compared_with_the_stable_cluster_by_its_stable_query() {
    let (prometheus, env) = (error_ratios(), Env::new().await);
    let stable = "max(canary_error_ratio{cluster=\"blue\"})";
    let section = |factor: f64| {
        json!({"url": prometheus.url, "checks": [
            {"name": "5xx ratio", "query": GREEN, "stableQuery": stable, "maxVsStable": factor},
        ]})
    };
    let found = env.validate(section(2.0)).await.unwrap();
    assert_eq!(
        found["metricQueries"], 2,
        "the check's query and its stable query"
    );
    let worse = env.evaluate(section(2.0)).await.unwrap();
    assert_eq!(worse["verdict"], "fail", "{worse}");
    assert_eq!(
        worse["reasons"][0],
        "prometheus 5xx ratio is 0.2 > 2 x stable 0.01"
    );
    let tolerated = env.evaluate(section(25.0)).await.unwrap();
    assert_eq!(tolerated["verdict"], "pass", "{tolerated}");
    assert_eq!(
        tolerated["reasons"][0],
        "prometheus 5xx ratio is 0.2, at most 25 x stable 0.01"
    );

    // A stable query with no data: refused at Prepare with its own path, inconclusive at a check.
    let nowhere = json!({"url": prometheus.url, "checks": [{"name": "5xx ratio", "query": GREEN,
        "stableQuery": "max(canary_error_ratio{cluster=\"nowhere\"})", "maxVsStable": 2}]});
    let refused = env.validate(nowhere.clone()).await.unwrap_err();
    assert!(
        refused
            .to_string()
            .starts_with("analysis.prometheus.checks[0].stableQuery: gives no data now"),
        "{refused}"
    );
    let decision = env.evaluate(nowhere).await.unwrap();
    assert_eq!(decision["verdict"], "inconclusive", "{decision}");
}

#[tokio::test]
async fn no_data_is_refused_at_prepare_and_inconclusive_at_a_check() {
    let (prometheus, env) = (error_ratios(), Env::new().await);
    for query in [
        "max(canary_error_ratio{cluster=\"nowhere\"})",
        // 0/0: Prometheus answers NaN.
        "max(canary_error_ratio{cluster=\"blue\"}) * 0 / 0",
    ] {
        let section = json!({"url": prometheus.url, "checks": [check(query, json!({"max": 1}))]});
        let refused = env.validate(section.clone()).await.unwrap_err();
        assert_eq!(refused.name().as_str(), "InvalidPlan");
        assert!(
            refused
                .to_string()
                .starts_with("analysis.prometheus.checks[0].query: gives no data now"),
            "{refused}"
        );
        let decision = env.evaluate(section).await.unwrap();
        assert_eq!(decision["verdict"], "inconclusive", "{decision}");
        assert_eq!(
            decision["reasons"][0],
            "prometheus 5xx ratio: no data (an empty result or NaN)"
        );
    }
}

#[tokio::test]
async fn queries_prometheus_rejects_or_a_check_cannot_judge_are_refused_naming_the_check() {
    let (prometheus, env) = (error_ratios(), Env::new().await);
    let cases = [
        ("sum(rate(canary_error_ratio[5", "parse error"),
        (
            "canary_error_ratio",
            "returned 2 series; aggregate the query to one",
        ),
        ("canary_error_ratio[1m]", "returned a matrix"),
    ];
    for (query, expected) in cases {
        let section = json!({"url": prometheus.url, "checks": [
            check(GREEN, json!({"max": 1})),
            check(query, json!({"max": 1})),
        ]});
        let refused = env.validate(section).await.unwrap_err();
        assert_eq!(refused.name().as_str(), "InvalidPlan", "{refused}");
        let text = refused.to_string();
        assert!(
            text.starts_with("analysis.prometheus.checks[1].query: ") && text.contains(expected),
            "{query}: {text}"
        );
    }
}

#[tokio::test]
async fn every_bad_query_is_named_at_once() {
    let (prometheus, env) = (error_ratios(), Env::new().await);
    let section = json!({"url": prometheus.url, "checks": [
        check("sum(rate(canary_error_ratio[5", json!({"max": 1})),
        check(GREEN, json!({"max": 1})),
        check("canary_error_ratio", json!({"max": 1})),
        check("canary_error_ratio[1m]", json!({"max": 1})),
    ]});
    let refused = env.validate(section).await.unwrap_err();
    assert_eq!(refused.name().as_str(), "InvalidPlan", "{refused}");
    let text = refused.to_string();
    assert!(
        text.starts_with("analysis.prometheus: 3 queries cannot be used: "),
        "{text}"
    );
    for (path, expected) in [
        ("analysis.prometheus.checks[0].query: ", "parse error"),
        ("analysis.prometheus.checks[2].query: ", "returned 2 series"),
        ("analysis.prometheus.checks[3].query: ", "returned a matrix"),
    ] {
        assert!(
            text.contains(path) && text.contains(expected),
            "{path}: {text}"
        );
    }
    assert!(!text.contains("checks[1]"), "{text}");
}

#[tokio::test]
async fn an_endpoint_that_cannot_be_reached_or_is_not_prometheus_is_named() {
    let (prometheus, env) = (error_ratios(), Env::new().await);
    let closed = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let unreachable = json!({"url": format!("http://127.0.0.1:{closed}"), "checks": [check(GREEN, json!({"max": 1}))]});
    let error = env.validate(unreachable.clone()).await.unwrap_err();
    assert_eq!(
        error.name().as_str(),
        "MetricsProviderUnavailable",
        "{error}"
    );
    assert!(
        error.to_string().contains("cannot reach http://127.0.0.1:"),
        "{error}"
    );
    // At a check it is never a pass: the check is unjudged (not counted, so the bake takes
    // one more) and says since when; past analysis.maxUnjudgedSeconds (default 3 intervals,
    // at least 30 s) the provider's error ends the check, and the rollout rolls back.
    let decision = env.evaluate(unreachable.clone()).await.expect("unjudged");
    assert_eq!(decision["verdict"], "inconclusive", "{decision}");
    assert_eq!(decision["rollback"], false);
    assert_eq!(
        decision["check"], 0,
        "the state machine adds one: check 1 again"
    );
    assert_eq!(decision["passes"], 0);
    let since = decision["unjudgedSince"].as_u64().expect("since");
    assert!(since > 1_700_000_000, "{decision}");
    let summary = decision["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("unjudged: analysis.prometheus.checks[0].query: ")
            && summary.contains("cannot reach http://127.0.0.1:")
            && summary.contains("the rollout rolls back at 30 s, analysis.maxUnjudgedSeconds"),
        "{summary}"
    );
    let still = env
        .evaluate_unjudged_since(unreachable.clone(), since - 10)
        .await
        .expect("within the bound");
    assert_eq!(
        still["unjudgedSince"],
        since - 10,
        "the first unjudged check's time is kept"
    );
    let error = env
        .evaluate_unjudged_since(unreachable, since - 31)
        .await
        .unwrap_err();
    assert_eq!(
        error.name().as_str(),
        "MetricsProviderUnavailable",
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("without a verdict, past analysis.maxUnjudgedSeconds (30 s)"),
        "{error}"
    );

    // A base URL that is not the API's: Prometheus answers 404 page not found.
    let wrong = json!({"url": format!("{}/graph", prometheus.url), "checks": [check(GREEN, json!({"max": 1}))]});
    let error = env.validate(wrong).await.unwrap_err();
    assert_eq!(error.name().as_str(), "MetricsProviderRefused", "{error}");
    assert!(error.to_string().contains("404"), "{error}");
}

#[tokio::test]
async fn an_answer_of_several_megabytes_is_bounded_and_named() {
    let env = Env::new().await;
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("a free port");
    let url = format!("http://{}", listener.local_addr().expect("its address"));
    std::thread::spawn(move || {
        // Answers every request with 3 MB of JSON-looking text.
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            let body = format!(
                "{{\"status\":\"success\",\"data\":{{\"pad\":\"{}\"}}}}",
                "x".repeat(3 << 20)
            );
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let section = json!({"url": url, "checks": [check(GREEN, json!({"max": 1}))]});
    let error = env.validate(section).await.unwrap_err();
    assert_eq!(error.name().as_str(), "InvalidPlan", "{error}");
    assert!(
        error
            .to_string()
            .contains("answered more than 1048576 bytes"),
        "{error}"
    );
}

/// Each cluster's p99 latency every 15 s over the last ten minutes, on the same cycle of spread:
/// green's `factor` times blue's, both far under any threshold.
fn latencies(factor: f64) -> PrometheusServer {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_secs();
    // Each sample ±10 % at random (a fixed sequence), as a p99 of real requests varies; not a
    // repeating pattern, which the comparison would read as each cluster's own drift
    // (docs/signals/compare.md).
    let mut state: u64 = 20_261_202;
    let mut spread = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        0.9 + 0.2 * ((state >> 11) as f64 / (1u64 << 53) as f64)
    };
    let mut samples = String::from("# TYPE request_latency_p99 gauge\n");
    for ago in (0..=600).rev().step_by(15) {
        let at = now - ago;
        let (blue, green) = (spread(), spread());
        samples.push_str(&format!(
            "request_latency_p99{{cluster=\"blue\"}} {} {at}\n",
            0.1 * blue
        ));
        samples.push_str(&format!(
            "request_latency_p99{{cluster=\"green\"}} {} {at}\n",
            0.1 * factor * green
        ));
    }
    samples.push_str("# EOF\n");
    PrometheusServer::start(&samples)
}

/// The plan's analysis: Prometheus's endpoint, no threshold, and the comparison of `query`.
fn comparison(prometheus: &PrometheusServer, query: &str) -> Value {
    json!({
        "prometheus": {"url": prometheus.url},
        // The first step's bake (120 s) and its extension hold minSamples 30 s periods.
        "extendBakeSeconds": 600,
        "compare": {"periodSeconds": 30, "lookbackSeconds": 600, "minSamples": 8, "metrics": [
            {"name": "p99 latency", "prometheus": {"query": query, "baseline": "blue"}}]},
    })
}

const P99: &str = "max(request_latency_p99{cluster=\"{{cluster}}\"})";

impl Env {
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

    async fn validate_analysis(&self, analysis: Value) -> Result<Value, AnalysisError> {
        let mut plan = plan(json!(null));
        plan["analysis"] = analysis;
        handle(&self.clients.apis(), plan)
            .await
            .map(|admitted| admitted["analysis"].clone())
    }
}

#[tokio::test]
async fn a_canary_slower_than_its_baseline_in_prometheus_fails_the_comparison() {
    let (prometheus, env) = (latencies(1.5), Env::new().await);
    let found = env
        .validate_analysis(comparison(&prometheus, P99))
        .await
        .unwrap();
    assert_eq!(found["metricQueries"], 2, "a subquery per side");
    let failing = env
        .evaluate_analysis(comparison(&prometheus, P99))
        .await
        .unwrap();
    assert_eq!(failing["verdict"], "fail", "{failing}");
    let reason = failing["reasons"][0].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("compare p99 latency: High (check Fail at score 0): canary 0.1"),
        "{reason}"
    );
    assert!(
        reason.contains("vs baseline 0.09") || reason.contains("vs baseline 0.1"),
        "{reason}"
    );
    assert!(reason.contains("(20 periods)"), "{reason}");
}

#[tokio::test]
async fn a_canary_like_its_baseline_in_prometheus_passes_the_comparison() {
    let (prometheus, env) = (latencies(1.0), Env::new().await);
    let passing = env
        .evaluate_analysis(comparison(&prometheus, P99))
        .await
        .unwrap();
    assert_eq!(passing["verdict"], "pass", "{passing}");
}

#[tokio::test]
async fn a_comparison_query_giving_several_series_is_refused_before_traffic_moves() {
    let (prometheus, env) = (latencies(1.0), Env::new().await);
    let both = "request_latency_p99{cluster!=\"{{cluster}}-none\"}";
    let refused = env
        .validate_analysis(comparison(&prometheus, both))
        .await
        .expect_err("two series");
    assert_eq!(refused.name(), canary_core::ErrorName::InvalidPlan);
    assert!(
        refused.to_string().starts_with(
            "analysis.compare.metrics[0].prometheus: canary: returned 2 series; aggregate the query to one"
        ),
        "{refused}"
    );
}

/// A latency histogram per cluster (`http_seconds`, buckets 0.1, 0.5, 1 and +Inf), scraped every
/// 15 s for the last 10 minutes: 300 requests a scrape each, of which 1 % of blue's are slower
/// than 0.5 s and `green_slow` of green's.
fn histograms(green_slow: f64) -> PrometheusServer {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_secs();
    let mut buckets = String::from("# TYPE http_seconds_bucket unknown\n");
    let mut counts = String::from("# TYPE http_seconds_count unknown\n");
    for (cluster, slow_share) in [("blue", 0.01), ("green", green_slow)] {
        let (mut requests, mut slow) = (0.0, 0.0);
        for ago in (0..=600).rev().step_by(15) {
            let at = now - ago;
            requests += 300.0;
            slow += (300.0 * slow_share).round();
            for (le, within) in [
                ("0.1", (requests - slow) * 0.5),
                ("0.5", requests - slow),
                ("1.0", requests - slow / 2.0),
                ("+Inf", requests),
            ] {
                buckets.push_str(&format!(
                    "http_seconds_bucket{{cluster=\"{cluster}\",le=\"{le}\"}} {within} {at}\n"
                ));
            }
            counts.push_str(&format!(
                "http_seconds_count{{cluster=\"{cluster}\"}} {requests} {at}\n"
            ));
        }
    }
    PrometheusServer::start(&format!("{buckets}{counts}# EOF\n"))
}

/// The comparison of the requests slower than `threshold` in the `http_seconds` histogram.
fn slow_requests(prometheus: &PrometheusServer, threshold: f64) -> Value {
    json!({
        "prometheus": {"url": prometheus.url},
        "extendBakeSeconds": 600,
        "compare": {"periodSeconds": 30, "lookbackSeconds": 600, "minSamples": 8, "metrics": [
            {"name": "slow requests", "slowerThan": threshold,
             "prometheus": {"query": "http_seconds{cluster=\"{{cluster}}\"}", "baseline": "blue"}}]},
    })
}

#[tokio::test]
async fn slow_requests_counted_from_a_histograms_buckets_fail_a_slower_canary_and_pass_a_healthy_one(
) {
    let env = Env::new().await;
    let slower = histograms(0.10);
    let found = env
        .validate_analysis(slow_requests(&slower, 0.5))
        .await
        .unwrap();
    assert_eq!(
        found["metricQueries"], 4,
        "requests and slow requests, per side"
    );
    let failing = env
        .evaluate_analysis(slow_requests(&slower, 0.5))
        .await
        .unwrap();
    assert_eq!(failing["verdict"], "fail", "{failing}");
    let reason = failing["reasons"][0].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("compare slow requests: High (check Fail at score 0)"),
        "{reason}"
    );
    // An integer bound is matched as the client wrote it (`1.0` here).
    let at_one = env
        .evaluate_analysis(slow_requests(&slower, 1.0))
        .await
        .unwrap();
    assert_eq!(at_one["verdict"], "fail", "{at_one}");

    let healthy = histograms(0.01);
    let passing = env
        .evaluate_analysis(slow_requests(&healthy, 0.5))
        .await
        .unwrap();
    assert_eq!(passing["verdict"], "pass", "{passing}");
}

#[tokio::test]
async fn a_slow_request_threshold_between_a_histograms_buckets_is_refused_before_traffic_moves() {
    let (prometheus, env) = (histograms(0.01), Env::new().await);
    let refused = env
        .validate_analysis(slow_requests(&prometheus, 0.45))
        .await
        .expect_err("0.45 is no bucket's bound");
    assert_eq!(refused.name(), canary_core::ErrorName::InvalidPlan);
    assert!(
        refused.to_string().starts_with(
            "analysis.compare.metrics[0].prometheus: canary: the histogram has requests but no bucket whose `le` is slowerThan (0.45)"
        ),
        "{refused}"
    );
}

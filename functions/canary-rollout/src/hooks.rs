//! The plan's hooks: a team's own Lambda functions, run one after the other at a point of the
//! rollout. Each gets the JSON below and must answer `{"status": "pass"}`; `{"status":
//! "fail", "reason": "…"}`, an error, a timeout or any other answer fails the rollout with
//! `HookFailed` and the hook's reason.

use std::time::Duration;

use canary_aws::{FunctionInvoker, Invocation};
use canary_core::hooks::HookPoint;
use canary_core::limits::{truncate, MAX_REASON_BYTES};
use canary_core::RolloutPlan;
use serde::Serialize;
use serde_json::{json, Value};
use tracing::info;

use crate::error::AnalysisError;

/// Where the rollout stands, as the state machine passes it on to every hook.
#[derive(Debug, Clone)]
pub struct HookContext {
    pub execution_arn: String,
    /// `{number, count, weight}`; absent before traffic moves.
    pub step: Option<Value>,
    /// The weights now, per traffic target.
    pub weights: Value,
    /// In the test-traffic stage: where test requests go and what they carry (the stage's
    /// `addresses`).
    pub test_traffic: Option<Value>,
}

#[derive(Debug, Serialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HooksOutput {
    pub point: HookPoint,
    /// The functions that ran and passed, in order.
    pub passed: Vec<String>,
}

pub async fn run_hooks(
    functions: &dyn FunctionInvoker,
    plan: &RolloutPlan,
    point: HookPoint,
    context: HookContext,
) -> Result<HooksOutput, AnalysisError> {
    let hooks = plan.hooks.clone().unwrap_or_default();
    let timeout = Duration::from_secs(hooks.timeout().unsigned_abs());
    let mut payload = json!({
        "hook": point,
        "executionArn": context.execution_arn,
        "cluster": plan.cluster,
        "step": context.step,
        "weights": context.weights,
    });
    if let Some(addresses) = context.test_traffic {
        payload["testTraffic"] = json!({ "addresses": addresses });
    }
    let payload = serde_json::to_vec(&payload)
        .map_err(|e| AnalysisError::InvalidInput(format!("hook payload not serializable: {e}")))?;
    let mut passed = Vec::new();
    for function in hooks.at(point) {
        let invocation = functions.invoke(function, &payload, timeout).await?;
        if let Err(reason) = judge(&invocation, hooks.timeout()) {
            return Err(AnalysisError::HookFailed {
                point: point.as_str(),
                function: function.clone(),
                reason,
            });
        }
        info!(point = point.as_str(), %function, "hook passed");
        passed.push(function.clone());
    }
    Ok(HooksOutput { point, passed })
}

/// `Ok` for `{"status": "pass"}`; otherwise why not, bounded (it ends up in the cause).
/// The first bytes of an answer, as text a person can read in one line.
fn first_bytes(bytes: &[u8]) -> String {
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(120)]);
    let line: String = head
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    format!("`{}`", line.trim())
}

pub fn judge(invocation: &Invocation, timeout_seconds: i64) -> Result<(), String> {
    let reason = match invocation {
        Invocation::TimedOut => format!("did not answer within {timeout_seconds} s"),
        Invocation::Raised(bytes) => {
            let Ok(error) = serde_json::from_slice::<Value>(bytes) else {
                return Err(format!(
                    "raised an error that is not JSON, beginning: {}",
                    first_bytes(bytes)
                ));
            };
            let text = |key: &str| error.get(key).and_then(Value::as_str).unwrap_or("");
            format!(
                "raised {}: {}",
                match text("errorType") {
                    "" => "an error",
                    other => other,
                },
                text("errorMessage")
            )
        }
        Invocation::Answered(bytes) => {
            let Ok(answer) = serde_json::from_slice::<Value>(bytes) else {
                return Err(format!(
                    "answered {} bytes that are not JSON, beginning: {}",
                    bytes.len(),
                    first_bytes(bytes)
                ));
            };
            match answer.get("status").and_then(Value::as_str) {
                Some("pass") => return Ok(()),
                Some("fail") => format!(
                    "answered fail: {}",
                    answer
                        .get("reason")
                        .and_then(Value::as_str)
                        .unwrap_or("(no reason given)")
                ),
                _ => {
                    let shown =
                        String::from_utf8_lossy(&serde_json::to_vec(&answer).unwrap_or_default())
                            .into_owned();
                    format!(
                        "answered neither {{\"status\": \"pass\"}} nor {{\"status\": \"fail\"}}: {}",
                        truncate(&shown, 200)
                    )
                }
            }
        }
    };
    Err(truncate(&reason, MAX_REASON_BYTES))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answered(value: Value) -> Invocation {
        Invocation::Answered(serde_json::to_vec(&value).unwrap())
    }

    #[test]
    fn only_a_pass_passes() {
        assert_eq!(judge(&answered(json!({"status": "pass"})), 60), Ok(()));
        assert_eq!(
            judge(
                &answered(json!({"status": "fail", "reason": "p99 is 2.3 s"})),
                60
            ),
            Err("answered fail: p99 is 2.3 s".to_owned())
        );
        assert_eq!(
            judge(&answered(json!({"status": "fail"})), 60),
            Err("answered fail: (no reason given)".to_owned())
        );
        assert_eq!(
            judge(&answered(json!({"ok": true})), 60),
            Err(
                "answered neither {\"status\": \"pass\"} nor {\"status\": \"fail\"}: {\"ok\":true}"
                    .to_owned()
            )
        );
        // Not JSON is said so (it once read as answering `null`).
        assert_eq!(
            judge(&Invocation::Answered(b"not json".to_vec()), 60),
            Err("answered 8 bytes that are not JSON, beginning: `not json`".to_owned())
        );
        assert_eq!(
            judge(&Invocation::TimedOut, 30),
            Err("did not answer within 30 s".to_owned())
        );
        let raised =
            serde_json::to_vec(&json!({"errorType": "KeyError", "errorMessage": "'url'"})).unwrap();
        assert_eq!(
            judge(&Invocation::Raised(raised), 60),
            Err("raised KeyError: 'url'".to_owned())
        );
    }

    /// Answers by function name: `pass`, `fail`, or a timeout for anything else.
    struct Fake(std::sync::Mutex<Vec<String>>);

    #[async_trait::async_trait]
    impl FunctionInvoker for Fake {
        async fn invoke(
            &self,
            function_arn: &str,
            payload: &[u8],
            _timeout: Duration,
        ) -> Result<Invocation, canary_aws::AwsError> {
            let payload: Value = serde_json::from_slice(payload).unwrap();
            assert_eq!(payload["hook"], "afterEachStep");
            assert_eq!(payload["step"]["weight"], 50);
            self.0.lock().unwrap().push(function_arn.to_owned());
            Ok(match function_arn.rsplit(':').next() {
                Some("pass") => answered(json!({"status": "pass"})),
                Some("fail") => answered(json!({"status": "fail", "reason": "no"})),
                _ => Invocation::TimedOut,
            })
        }
    }

    #[tokio::test]
    async fn hooks_run_in_order_and_the_first_failure_stops_them() {
        let arn = |name: &str| format!("arn:aws:lambda:us-east-1:123456789012:function:{name}");
        let plan = json!({
            "cluster": {"name": "green", "region": "us-east-1"},
            "trafficTargets": [{"route53": {"hostedZoneId": "Z1", "recordName": "a.example.com", "recordType": "A",
                                            "stableSetIdentifier": "blue", "canarySetIdentifier": "green"}}],
            "steps": [{"weight": 50}, {"weight": 100}],
            "bake": {"seconds": 60, "checkIntervalSeconds": 10},
            "hooks": {"afterEachStep": [arn("pass"), arn("fail"), arn("never")]},
        });
        let fake = Fake(Default::default());
        let context = HookContext {
            execution_arn: "arn:aws:states:us-east-1:123456789012:execution:sm:x".to_owned(),
            step: Some(json!({"number": 1, "count": 2, "weight": 50})),
            weights: json!([]),
            test_traffic: None,
        };
        let plan = RolloutPlan::parse(plan).expect("a valid plan").plan;
        let err = run_hooks(&fake, &plan, HookPoint::AfterEachStep, context)
            .await
            .expect_err("the second hook fails");
        assert_eq!(
            err.to_string(),
            format!(
                "afterEachStep hook {} failed: answered fail: no",
                arn("fail")
            )
        );
        assert_eq!(*fake.0.lock().unwrap(), [arn("pass"), arn("fail")]);
    }

    #[test]
    fn a_long_reason_is_cut() {
        let reason = "x".repeat(10_000);
        let err = judge(&answered(json!({"status": "fail", "reason": reason})), 60).unwrap_err();
        assert!(err.len() <= MAX_REASON_BYTES, "{}", err.len());
    }

    #[test]
    fn an_answer_that_is_not_json_is_said_so_with_its_first_bytes() {
        let mut html = b"<html>\n<body>Bad Gateway</body>".to_vec();
        html.extend(std::iter::repeat_n(b'x', 5 * 1024 * 1024));
        let err = judge(&Invocation::Answered(html), 60).unwrap_err();
        assert!(
            err.starts_with(
                "answered 5242911 bytes that are not JSON, beginning: `<html> <body>Bad Gateway"
            ),
            "{err}"
        );
        assert!(err.len() <= 300, "{}", err.len());
        let err = judge(&Invocation::Raised(b"Task timed out".to_vec()), 60).unwrap_err();
        assert_eq!(
            err,
            "raised an error that is not JSON, beginning: `Task timed out`"
        );
    }
}

//! AWS Health events for the Regions a rollout runs in. AWS Health tells EventBridge (`source`
//! `aws.health`, detail-type "AWS Health Event"; no support plan needed for that feed) of an
//! issue with a service in a Region. While EKS, Elastic Load Balancing, EC2 or Route 53 has an
//! open issue where the new cluster or its traffic lives, a canary's verdict means nothing: it
//! fails for AWS's reasons, or passes before the issue reaches it. So an open issue holds the
//! rollout as a change freeze does (`crate::freeze`): no step forward, within the freeze's
//! bound, until AWS Health says it is closed.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::arn::is_region;
use crate::limits::{truncate, MAX_LINE_BYTES};

/// The `eventRegion` of an issue with a global service (Route 53): every Region's (and among
/// every rollout's Regions: `RolloutPlan::regions`).
pub const GLOBAL_REGION: &str = "global";
/// The services whose issues hold a rollout (AWS Health's `service` codes); the template's rule
/// passes only these.
pub const HELD_BY_SERVICES: [&str; 4] = ["EKS", "ELASTICLOADBALANCING", "EC2", "ROUTE53"];
/// Most bytes of an event's description kept in its record (it is shown in a held rollout's
/// reason line, cut there again).
pub const MAX_DESCRIPTION_BYTES: usize = 512;

/// One AWS Health event, reduced to what a hold says (and as its record stores it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HealthEvent {
    pub event_arn: String,
    /// `EKS`, `EC2`, ...
    pub service: String,
    /// `AWS_EKS_OPERATIONAL_ISSUE`, ...
    pub event_type_code: String,
    /// A Region, or [`GLOBAL_REGION`].
    pub region: String,
    /// `open`, `closed` or `upcoming`.
    pub status: String,
    /// As AWS Health gives it (`Fri, 27 Jan 2023 06:02:51 GMT`).
    pub start_time: String,
    pub description: String,
}

impl HealthEvent {
    /// The event's `detail`, as EventBridge delivers it; what is wrong with one AWS Health
    /// could not have sent, said.
    pub fn parse(detail: &Value) -> Result<HealthEvent, String> {
        let text = |field: &str| {
            detail
                .get(field)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| format!("detail.{field} is missing or not a string"))
        };
        let event = HealthEvent {
            event_arn: text("eventArn")?,
            service: text("service")?,
            event_type_code: text("eventTypeCode")?,
            region: text("eventRegion")?,
            status: text("statusCode")?,
            start_time: text("startTime").unwrap_or_default(),
            description: detail
                .get("eventDescription")
                .and_then(Value::as_array)
                .and_then(|d| d.iter().find_map(|d| d.get("latestDescription")))
                .and_then(Value::as_str)
                .map(|d| truncate(d.trim(), MAX_DESCRIPTION_BYTES))
                .unwrap_or_default(),
        };
        if !event.event_arn.starts_with("arn:aws") || !event.event_arn.contains(":health:") {
            return Err(format!(
                "detail.eventArn `{}` is not an AWS Health event ARN",
                truncate(&event.event_arn, 120)
            ));
        }
        if event.region != GLOBAL_REGION && !is_region(&event.region) {
            return Err(format!(
                "detail.eventRegion `{}` is not an AWS Region (nor `global`)",
                truncate(&event.region, 64)
            ));
        }
        if !["open", "closed", "upcoming"].contains(&event.status.as_str()) {
            return Err(format!(
                "detail.statusCode `{}` is not open, closed or upcoming",
                truncate(&event.status, 64)
            ));
        }
        Ok(event)
    }

    /// Whether the event holds rollouts now: an open issue with a service they depend on.
    pub fn holds(&self) -> bool {
        self.status == "open" && HELD_BY_SERVICES.contains(&self.service.as_str())
    }

    /// Its record's name under the Region's path: the event ARN's digest (an ARN has `/`).
    pub fn record_name(&self) -> String {
        let digest = Sha256::digest(self.event_arn.as_bytes());
        digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
    }

    /// Why it holds a rollout, in a line.
    pub fn reason_line(&self) -> String {
        let mut line = format!(
            "AWS Health: an open {} issue in {} ({}, since {})",
            self.service, self.region, self.event_type_code, self.start_time
        );
        if !self.description.is_empty() {
            line.push_str(&format!(": {}", self.description));
        }
        truncate(&line, MAX_LINE_BYTES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn detail() -> Value {
        json!({
            "eventArn": "arn:aws:health:us-east-1::event/EKS/AWS_EKS_OPERATIONAL_ISSUE/AWS_EKS_OPERATIONAL_ISSUE_7f35c8ae",
            "service": "EKS",
            "eventTypeCode": "AWS_EKS_OPERATIONAL_ISSUE",
            "eventTypeCategory": "issue",
            "eventScopeCode": "PUBLIC",
            "startTime": "Fri, 27 Nov 2026 06:02:51 GMT",
            "statusCode": "open",
            "eventRegion": "us-east-1",
            "eventDescription": [{"language": "en_US", "latestDescription": "We are investigating increased API error rates."}],
        })
    }

    #[test]
    fn an_open_issue_of_a_held_service_holds_and_says_so() {
        let event = HealthEvent::parse(&detail()).expect("valid");
        assert!(event.holds());
        assert_eq!(
            event.reason_line(),
            "AWS Health: an open EKS issue in us-east-1 (AWS_EKS_OPERATIONAL_ISSUE, since Fri, 27 \
             Nov 2026 06:02:51 GMT): We are investigating increased API error rates."
        );
        assert_eq!(event.record_name().len(), 32);
        let mut closed = detail();
        closed["statusCode"] = json!("closed");
        assert!(!HealthEvent::parse(&closed).expect("valid").holds());
        let mut other = detail();
        other["service"] = json!("S3");
        assert!(!HealthEvent::parse(&other).expect("valid").holds());
    }

    #[test]
    fn what_aws_health_could_not_send_is_refused_by_name() {
        for (field, value, said) in [
            ("eventArn", json!("arn:aws:ec2:x"), "detail.eventArn"),
            ("eventRegion", json!("moon-1"), "detail.eventRegion"),
            ("statusCode", json!("resolved"), "detail.statusCode"),
            ("service", json!(7), "detail.service is missing"),
        ] {
            let mut bad = detail();
            bad[field] = value;
            let err = HealthEvent::parse(&bad).expect_err(field);
            assert!(err.starts_with(said), "{err}");
        }
    }
}

//! AWS Health events for the Regions a rollout runs in. AWS Health tells EventBridge (`source`
//! `aws.health`, detail-type "AWS Health Event"; no support plan needed for that feed) of an
//! issue with a service in a Region. While EKS, Elastic Load Balancing, EC2 or Route 53 has an
//! open issue where the new cluster or its traffic lives, a canary's verdict means nothing: it
//! fails for AWS's reasons, or passes before the issue reaches it. So an open issue holds the
//! rollout as a change freeze does (`crate::freeze`): no step forward, within the freeze's
//! bound, until AWS Health says it is closed.

use std::time::{Duration, SystemTime};

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
/// How long the record of a closed issue is kept. EventBridge does not promise order and
/// retries a delivery for up to 24 hours: an earlier update of the issue (its `open`) can
/// arrive after its close. The closed record is newer, so that late update changes nothing,
/// where a deleted record would let it hold the Region's rollouts until their freeze bound.
pub const CLOSED_RECORD_KEPT: Duration = Duration::from_secs(2 * 24 * 3600);

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
    /// When AWS Health last updated the issue, as it gives it: orders the deliveries of one
    /// issue's updates. Empty in a record written before it was kept.
    #[serde(default)]
    pub last_updated_time: String,
    pub description: String,
}

/// What one delivery of an issue's event does to the issue's record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordChange {
    /// Written: an open issue holds the Region's rollouts; a closed one's record says it is
    /// closed (and outlives late deliveries of its earlier updates: [`CLOSED_RECORD_KEPT`]).
    Record,
    /// Deleted: neither open nor closed (`upcoming`), or a service no rollout waits on.
    Forget,
    /// Nothing: the record holds a later update of the issue than this one.
    Stale,
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
            last_updated_time: text("lastUpdatedTime").unwrap_or_default(),
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

    /// What this delivery does to the issue's record (`recorded`: the record there is, if any).
    /// `updated` reads AWS Health's times; a time missing or unreadable on either side orders
    /// nothing, and the delivery is taken.
    pub fn record_change(
        &self,
        recorded: Option<&HealthEvent>,
        updated: impl Fn(&str) -> Option<SystemTime>,
    ) -> RecordChange {
        let older = recorded.is_some_and(|recorded| {
            matches!(
                (updated(&self.last_updated_time), updated(&recorded.last_updated_time)),
                (Some(this), Some(theirs)) if this < theirs
            )
        });
        if older {
            RecordChange::Stale
        } else if self.holds() || self.status == "closed" {
            RecordChange::Record
        } else {
            RecordChange::Forget
        }
    }

    /// Whether this record is of a closed issue last updated more than [`CLOSED_RECORD_KEPT`]
    /// before `now` (one without a readable time: too).
    pub fn closed_and_expired(
        &self,
        now: SystemTime,
        updated: impl Fn(&str) -> Option<SystemTime>,
    ) -> bool {
        self.status == "closed"
            && updated(&self.last_updated_time)
                .is_none_or(|at| now.duration_since(at).unwrap_or_default() > CLOSED_RECORD_KEPT)
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
            "lastUpdatedTime": "Fri, 27 Nov 2026 06:10:00 GMT",
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

    /// The test's clock: minutes since a day's start, spelled `+<minutes>`.
    fn minutes(text: &str) -> Option<SystemTime> {
        let minutes: u64 = text.strip_prefix('+')?.parse().ok()?;
        Some(SystemTime::UNIX_EPOCH + Duration::from_secs(minutes * 60))
    }

    fn update(status: &str, at: &str) -> HealthEvent {
        let mut detail = detail();
        detail["statusCode"] = json!(status);
        detail["lastUpdatedTime"] = json!(at);
        HealthEvent::parse(&detail).expect("valid")
    }

    #[test]
    fn an_issues_updates_apply_in_aws_healths_order_not_in_delivery_order() {
        let (opened, closed) = (update("open", "+10"), update("closed", "+70"));
        assert_eq!(opened.record_change(None, minutes), RecordChange::Record);
        assert_eq!(
            closed.record_change(Some(&opened), minutes),
            RecordChange::Record
        );
        // Its open delivered after its close (EventBridge does not promise order): nothing.
        assert_eq!(
            opened.record_change(Some(&closed), minutes),
            RecordChange::Stale
        );
        // A later update of one issue, open again or updated: taken.
        assert_eq!(
            update("open", "+90").record_change(Some(&closed), minutes),
            RecordChange::Record
        );
        // Without a readable time on either side, nothing is ordered: the delivery is taken.
        assert_eq!(
            update("open", "").record_change(Some(&closed), minutes),
            RecordChange::Record
        );
        assert_eq!(
            update("upcoming", "+95").record_change(Some(&closed), minutes),
            RecordChange::Forget
        );
    }

    #[test]
    fn a_closed_issues_record_outlives_eventbridges_retries_then_goes() {
        let closed = update("closed", "+0");
        let at = |minutes: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(minutes * 60);
        assert!(
            !closed.closed_and_expired(at(25 * 60), minutes),
            "a day's retries later"
        );
        assert!(closed.closed_and_expired(at(49 * 60), minutes));
        assert!(!update("open", "+0").closed_and_expired(at(49 * 60), minutes));
        assert!(update("closed", "").closed_and_expired(at(0), minutes));
    }
}

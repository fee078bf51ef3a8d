//! Reading the EventBridge event for an EKS API call recorded by CloudTrail: the envelope as
//! `aws_lambda_events` models it, the CloudTrail record in its `detail`.

use std::collections::BTreeMap;

use aws_lambda_events::event::eventbridge::EventBridgeEvent;
use serde_json::Value;

pub const DETAIL_TYPE: &str = "AWS API Call via CloudTrail";
pub const EVENT_SOURCE: &str = "eks.amazonaws.com";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EksCall {
    CreateCluster,
    DeleteCluster,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EksEvent {
    pub call: EksCall,
    pub cluster: String,
    pub region: String,
    /// The cluster's ARN: the response's, else built from the account the call was made in.
    /// A cluster is its account, region and name; the name alone is not an identity.
    pub cluster_arn: String,
    /// CloudTrail's id of the API call: the same for every delivery of the same event.
    pub event_id: String,
    /// Set when the API call failed (`detail.errorCode`, `detail.errorMessage`).
    pub error: Option<String>,
    /// The cluster's tags, as EKS accepted them (response), else as requested.
    pub tags: BTreeMap<String, String>,
}

fn text<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn tags(value: Option<&Value>) -> BTreeMap<String, String> {
    value
        .and_then(Value::as_object)
        .map(|tags| {
            tags.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

/// Parses the event; the error says what is wrong with it in words a person can act on.
pub fn parse(event: &Value) -> Result<EksEvent, String> {
    if !event.is_object() {
        return Err("the event is not a JSON object".to_owned());
    }
    if !event.get("detail").is_some_and(Value::is_object) {
        return Err("the event has no `detail` object".to_owned());
    }
    let envelope: EventBridgeEvent = serde_json::from_value(event.clone())
        .map_err(|e| format!("the event is not an EventBridge event: {e}"))?;
    if envelope.detail_type != DETAIL_TYPE {
        return Err(format!(
            "detail-type is `{}`, expected `{DETAIL_TYPE}`",
            envelope.detail_type
        ));
    }
    let detail = &envelope.detail;
    let source = text(detail, "/eventSource").unwrap_or_default();
    if source != EVENT_SOURCE {
        return Err(format!(
            "detail.eventSource is `{source}`, expected `{EVENT_SOURCE}`"
        ));
    }
    let call = match text(detail, "/eventName") {
        Some("CreateCluster") => EksCall::CreateCluster,
        Some("DeleteCluster") => EksCall::DeleteCluster,
        Some(other) => {
            return Err(format!(
                "detail.eventName is `{other}`; only CreateCluster and DeleteCluster are handled"
            ))
        }
        None => return Err("the event has no detail.eventName".to_owned()),
    };
    let cluster = text(detail, "/requestParameters/name")
        .or_else(|| text(detail, "/responseElements/cluster/name"))
        .ok_or("the event names no cluster (detail.requestParameters.name)")?
        .to_owned();
    let region = text(detail, "/awsRegion")
        .or(envelope.region.as_deref().filter(|r| !r.is_empty()))
        .ok_or("the event names no region (detail.awsRegion)")?
        .to_owned();
    let cluster_arn = match text(detail, "/responseElements/cluster/arn") {
        Some(arn) => arn.to_owned(),
        None => {
            let account = text(detail, "/recipientAccountId")
                .or(envelope.account.as_deref().filter(|a| !a.is_empty()))
                .ok_or("the event names no account (detail.recipientAccountId)")?;
            format!("arn:aws:eks:{region}:{account}:cluster/{cluster}")
        }
    };
    let event_id = text(detail, "/eventID")
        .or(envelope.id.as_deref().filter(|id| !id.is_empty()))
        .ok_or("the event has no id (detail.eventID)")?
        .to_owned();
    let error = text(detail, "/errorCode").map(|code| match text(detail, "/errorMessage") {
        Some(message) => format!("{code}: {message}"),
        None => code.to_owned(),
    });
    let response_tags = tags(detail.pointer("/responseElements/cluster/tags"));
    let tags = if response_tags.is_empty() {
        tags(detail.pointer("/requestParameters/tags"))
    } else {
        response_tags
    };
    Ok(EksEvent {
        call,
        cluster,
        region,
        cluster_arn,
        event_id,
        error,
        tags,
    })
}

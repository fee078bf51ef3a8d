//! Change freezes as AWS keeps them: Systems Manager Change Calendars (`GetCalendarState`) and
//! the stack's freeze switch, an SSM parameter `cluster-canary freeze` writes
//! (`canary_core::freeze::FreezeSwitch` as JSON).

use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_sdk_ssm as ssm;
use canary_core::freeze::FreezeSwitch;

use crate::error::{AwsError, AwsErrorKind};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CalendarState {
    Open,
    Closed,
}

/// A calendar's state now, and when it changes next (RFC 3339, when the calendar says).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CalendarReading {
    pub state: CalendarState,
    pub next_transition: Option<String>,
}

#[async_trait]
pub trait FreezeApi: Send + Sync {
    /// `GetCalendarState` of one calendar (a name or a document ARN).
    async fn calendar_state(&self, calendar: &str) -> Result<CalendarReading, AwsError>;
    /// The switch in `parameter`; a parameter that does not exist is an error (NotFound): the
    /// stack creates it.
    async fn switch(&self, parameter: &str) -> Result<FreezeSwitch, AwsError>;
    /// Overwrites the switch.
    async fn set_switch(&self, parameter: &str, switch: &FreezeSwitch) -> Result<(), AwsError>;
}

pub struct SdkFreeze {
    client: ssm::Client,
}

impl SdkFreeze {
    pub fn new(config: &SdkConfig) -> Self {
        SdkFreeze {
            client: ssm::Client::new(config),
        }
    }
}

#[async_trait]
impl FreezeApi for SdkFreeze {
    async fn calendar_state(&self, calendar: &str) -> Result<CalendarReading, AwsError> {
        let out = self
            .client
            .get_calendar_state()
            .calendar_names(calendar)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk("GetCalendarState", e))?;
        let state = match out.state() {
            Some(ssm::types::CalendarState::Open) => CalendarState::Open,
            Some(ssm::types::CalendarState::Closed) => CalendarState::Closed,
            other => {
                return Err(AwsError::new(
                    AwsErrorKind::Rejected,
                    "GetCalendarState",
                    format!("calendar {calendar}: no OPEN or CLOSED state in the answer ({other:?})"),
                ))
            }
        };
        Ok(CalendarReading {
            state,
            next_transition: out.next_transition_time().map(str::to_owned),
        })
    }

    async fn switch(&self, parameter: &str) -> Result<FreezeSwitch, AwsError> {
        let out = self
            .client
            .get_parameter()
            .name(parameter)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk("GetParameter", e))?;
        let value = out
            .parameter()
            .and_then(|p| p.value())
            .unwrap_or_default();
        serde_json::from_str(value).map_err(|e| {
            AwsError::new(
                AwsErrorKind::Rejected,
                "GetParameter",
                format!("parameter {parameter} does not hold a freeze switch (JSON with `frozen`): {e}"),
            )
        })
    }

    async fn set_switch(&self, parameter: &str, switch: &FreezeSwitch) -> Result<(), AwsError> {
        let value = serde_json::to_string(switch).map_err(|e| {
            AwsError::new(AwsErrorKind::Rejected, "PutParameter", e.to_string())
        })?;
        self.client
            .put_parameter()
            .name(parameter)
            .value(value)
            .r#type(ssm::types::ParameterType::String)
            .overwrite(true)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk("PutParameter", e))?;
        Ok(())
    }
}

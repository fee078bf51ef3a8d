//! Change freezes as AWS keeps them: Systems Manager Change Calendars (`GetCalendarState`) and
//! the stack's freeze switch, an SSM parameter `cluster-canary freeze` writes
//! (`canary_core::freeze::FreezeSwitch` as JSON), and reading them for a rollout or a fleet.
//!
//! A calendar or switch that cannot be read is taken as frozen (with why in the reason): a
//! freeze only ever holds a rollout where it is, so the safe reading of "unknown" is "frozen";
//! a long outage of SSM ends as frozen too long, within the plan's bound. Admit refuses a plan
//! whose calendars cannot be read at all, before anything moved.

use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_sdk_ssm as ssm;
use canary_core::freeze::{FreezeReading, FreezeSection, FreezeSwitch};

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
                let said = other.map_or("none", |state| state.as_str());
                let message = format!("calendar {calendar}: state {said}, neither OPEN nor CLOSED");
                return Err(AwsError::new(
                    AwsErrorKind::Rejected,
                    "GetCalendarState",
                    message,
                ));
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
        let value = out.parameter().and_then(|p| p.value()).unwrap_or_default();
        serde_json::from_str(value).map_err(|e| {
            AwsError::new(
                AwsErrorKind::Rejected,
                "GetParameter",
                format!(
                    "parameter {parameter} does not hold a freeze switch (JSON with `frozen`): {e}"
                ),
            )
        })
    }

    async fn set_switch(&self, parameter: &str, switch: &FreezeSwitch) -> Result<(), AwsError> {
        let value = serde_json::to_string(switch)
            .map_err(|e| AwsError::new(AwsErrorKind::Rejected, "PutParameter", e.to_string()))?;
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

/// A calendar or the switch Admit cannot read: where it is named, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct FreezeCheckError {
    pub path: String,
    pub message: String,
    /// The role may not read it (else it does not exist, or is not what it should be).
    pub access_denied: bool,
}

/// The stack's own freezes, from the function's environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StackFreeze {
    /// The SSM parameter holding the stack's freeze switch (`FREEZE_PARAMETER`).
    pub switch_parameter: Option<String>,
    /// Change Calendars every rollout and fleet of the stack honours (`CHANGE_CALENDARS`,
    /// comma-separated).
    pub calendars: Vec<String>,
}

impl StackFreeze {
    pub fn from_env(env: impl Fn(&str) -> Option<String>) -> Self {
        StackFreeze {
            switch_parameter: env("FREEZE_PARAMETER").filter(|v| !v.trim().is_empty()),
            calendars: env("CHANGE_CALENDARS")
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_owned)
                .collect(),
        }
    }
}

/// Where freezes are read from.
#[derive(Clone, Copy)]
pub struct Freezes<'a> {
    pub api: &'a dyn FreezeApi,
    pub stack: &'a StackFreeze,
}

/// One calendar to read, and the path that names it (for Admit's errors).
struct Calendar<'a> {
    path: String,
    name: &'a str,
}

impl<'a> Freezes<'a> {
    fn calendars(&self, plan: Option<&'a FreezeSection>) -> Vec<Calendar<'a>> {
        let stack = self.stack.calendars.iter().map(|name| Calendar {
            path: "the stack's ChangeCalendars".to_owned(),
            name: name.as_str(),
        });
        let planned = plan.into_iter().flat_map(|f| {
            f.calendars.iter().enumerate().map(|(i, name)| Calendar {
                path: format!("freeze.calendars[{i}]"),
                name: name.as_str(),
            })
        });
        let mut seen = std::collections::BTreeSet::new();
        stack
            .chain(planned)
            .filter(|c| seen.insert(c.name))
            .collect()
    }

    /// Why the rollout is frozen now (no reasons: it is not).
    pub async fn read(&self, plan: Option<&FreezeSection>) -> FreezeReading {
        let mut reasons = Vec::new();
        if let Some(parameter) = &self.stack.switch_parameter {
            match self.api.switch(parameter).await {
                Ok(switch) if switch.frozen => reasons.push(switch.reason_line()),
                Ok(_) => {}
                Err(e) => reasons.push(format!(
                    "the stack's freeze switch ({parameter}) could not be read, so it counts as on: {e}"
                )),
            }
        }
        for calendar in self.calendars(plan) {
            match self.api.calendar_state(calendar.name).await {
                Ok(reading) if reading.state == CalendarState::Closed => {
                    reasons.push(match reading.next_transition {
                        Some(at) => format!(
                            "Change Calendar {} is CLOSED (opens at {at})",
                            calendar.name
                        ),
                        None => format!("Change Calendar {} is CLOSED", calendar.name),
                    })
                }
                Ok(_) => {}
                Err(e) => reasons.push(format!(
                    "Change Calendar {} could not be read, so it counts as CLOSED: {e}",
                    calendar.name
                )),
            }
        }
        FreezeReading {
            reasons: reasons
                .into_iter()
                .map(|r| canary_core::limits::truncate(&r, canary_core::limits::MAX_LINE_BYTES))
                .collect(),
        }
    }

    /// At Admit: every calendar and the switch can be read. A calendar that does not exist (or
    /// is not a Change Calendar) is the plan's mistake; a refusal is the role's.
    pub async fn check(&self, plan: Option<&FreezeSection>) -> Result<(), FreezeCheckError> {
        if let Some(parameter) = &self.stack.switch_parameter {
            self.api.switch(parameter).await.map_err(|e| {
                FreezeCheckError {
                    path: "FREEZE_PARAMETER".to_owned(),
                    message: format!("the stack's freeze switch {parameter} cannot be read ({e}): the stack creates it; `cluster-canary unfreeze` writes it again"),
                    access_denied: e.kind == AwsErrorKind::AccessDenied,
                }
            })?;
        }
        for calendar in self.calendars(plan) {
            if let Err(e) = self.api.calendar_state(calendar.name).await {
                let why = match e.kind {
                    AwsErrorKind::NotFound => "does not exist in this account and region, or is not a Change Calendar (an SSM document of type ChangeCalendar)",
                    AwsErrorKind::AccessDenied => "may not be read by the function's role (ssm:GetCalendarState on the calendar and the documents it names)",
                    _ => "cannot be read",
                };
                return Err(FreezeCheckError {
                    path: calendar.path,
                    message: format!("Change Calendar `{}` {why}: {e}", calendar.name),
                    access_denied: e.kind == AwsErrorKind::AccessDenied,
                });
            }
        }
        Ok(())
    }
}

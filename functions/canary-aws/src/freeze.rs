//! Change freezes as AWS keeps them: Systems Manager Change Calendars (`GetCalendarState`) and
//! the stack's freeze switch, an SSM parameter `cluster-canary freeze` writes
//! (`canary_core::freeze::FreezeSwitch` as JSON), and reading them for a rollout or a fleet.
//!
//! AWS Health's open issues in a rollout's Regions hold it as a freeze does
//! (`canary_core::health`): evaluate-alarms keeps one SSM parameter per open issue under the
//! stack's `HEALTH_PARAMETER_PATH`, `<path>/<region>/<digest of the event ARN>`, written when
//! the issue opens and deleted when it closes, so reading a Region's is one call.
//!
//! A calendar or switch that cannot be read is taken as frozen (with why in the reason): a
//! freeze only ever holds a rollout where it is, so the safe reading of "unknown" is "frozen";
//! a long outage of SSM ends as frozen too long, within the plan's bound. Admit refuses a plan
//! whose calendars cannot be read at all, before anything moved.

use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_sdk_ssm as ssm;
use canary_core::freeze::{FreezeReading, FreezeSection, FreezeSwitch};
use canary_core::health::HealthEvent;

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

/// Most AWS Health records read for one Region: its open issues (AWS rarely has more than a
/// few open) and the issues closed in the last `CLOSED_RECORD_KEPT`.
const MAX_HEALTH_RECORDS_READ: usize = 50;

#[async_trait]
pub trait FreezeApi: Send + Sync {
    /// `GetCalendarState` of one calendar (a name or a document ARN).
    async fn calendar_state(&self, calendar: &str) -> Result<CalendarReading, AwsError>;
    /// The switch in `parameter`; a parameter that does not exist is an error (NotFound): the
    /// stack creates it.
    async fn switch(&self, parameter: &str) -> Result<FreezeSwitch, AwsError>;
    /// The AWS Health issues recorded under `path` (one Region's): the open ones, and the
    /// closed ones kept a while (`canary_core::health::CLOSED_RECORD_KEPT`; `holds()` tells).
    async fn health_records(&self, path: &str) -> Result<Vec<HealthEvent>, AwsError>;
}

/// The switch's writer: `cluster-canary freeze` and `unfreeze` only. A trait of its own so the
/// functions, which only read the switch, do not link `PutParameter` through [`FreezeApi`].
#[async_trait]
pub trait FreezeSwitchWriter: Send + Sync {
    /// Overwrites the switch.
    async fn set_switch(&self, parameter: &str, switch: &FreezeSwitch) -> Result<(), AwsError>;
}

/// The records of AWS Health issues: written by the `healthEvent` operation only.
#[async_trait]
pub trait HealthRecords: Send + Sync {
    /// Records an issue's latest update under `<path>/<region>/` (again: overwritten).
    async fn record_health_event(&self, path: &str, event: &HealthEvent) -> Result<(), AwsError>;
    /// Forgets an issue; one never recorded is no error.
    async fn forget_health_event(&self, path: &str, event: &HealthEvent) -> Result<(), AwsError>;
}

/// A Region's records' path under the stack's.
pub fn health_region_path(path: &str, region: &str) -> String {
    format!("{}/{region}", path.trim_end_matches('/'))
}

/// One issue's record: under its Region's path, named by its ARN's digest.
fn health_record_name(path: &str, event: &HealthEvent) -> String {
    format!(
        "{}/{}",
        health_region_path(path, &event.region),
        event.record_name()
    )
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

    async fn health_records(&self, path: &str) -> Result<Vec<HealthEvent>, AwsError> {
        let mut found = Vec::new();
        let mut token = None;
        loop {
            let page = self
                .client
                .get_parameters_by_path()
                .path(path)
                .set_next_token(token)
                .send()
                .await
                .map_err(|e| AwsError::from_sdk("GetParametersByPath", e))?;
            // A record that is not one (written by hand) is skipped: it holds nothing.
            found.extend(
                page.parameters()
                    .iter()
                    .filter_map(|p| p.value())
                    .filter_map(|v| serde_json::from_str::<HealthEvent>(v).ok()),
            );
            token = page.next_token().map(str::to_owned);
            if token.is_none() || found.len() >= MAX_HEALTH_RECORDS_READ {
                return Ok(found);
            }
        }
    }
}

#[async_trait]
impl FreezeSwitchWriter for SdkFreeze {
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

#[async_trait]
impl HealthRecords for SdkFreeze {
    async fn record_health_event(&self, path: &str, event: &HealthEvent) -> Result<(), AwsError> {
        let value = serde_json::to_string(event)
            .map_err(|e| AwsError::new(AwsErrorKind::Rejected, "PutParameter", e.to_string()))?;
        self.client
            .put_parameter()
            .name(health_record_name(path, event))
            .value(value)
            .r#type(ssm::types::ParameterType::String)
            .overwrite(true)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk("PutParameter", e))?;
        Ok(())
    }

    async fn forget_health_event(&self, path: &str, event: &HealthEvent) -> Result<(), AwsError> {
        let name = health_record_name(path, event);
        match self.client.delete_parameter().name(name).send().await {
            Ok(_) => Ok(()),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_parameter_not_found()) =>
            {
                Ok(())
            }
            Err(e) => Err(AwsError::from_sdk("DeleteParameter", e)),
        }
    }
}

/// A calendar, the switch or an SLO (`error_budget`) Admit cannot read: where it is named, and why.
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
    /// Where the open AWS Health issues are recorded (`HEALTH_PARAMETER_PATH`).
    pub health_path: Option<String>,
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
            health_path: env("HEALTH_PARAMETER_PATH").filter(|v| !v.trim().is_empty()),
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

    /// Why the rollout is frozen now (no reasons: it is not): the switch, the calendars, and
    /// an open AWS Health issue in one of `regions` (a record that cannot be read counts as
    /// one, as a calendar does).
    pub async fn read(&self, plan: Option<&FreezeSection>, regions: &[String]) -> FreezeReading {
        let mut reasons = Vec::new();
        if let Some(path) = &self.stack.health_path {
            for region in regions {
                let region_path = health_region_path(path, region);
                match self.api.health_records(&region_path).await {
                    Ok(events) => reasons.extend(
                        events
                            .iter()
                            .filter(|e| e.holds())
                            .map(HealthEvent::reason_line),
                    ),
                    Err(e) => reasons.push(format!(
                        "the open AWS Health issues of {region} ({region_path}) could not be \
                         read, so one counts as open: {e}"
                    )),
                }
            }
        }
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
            budgets: Vec::new(),
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

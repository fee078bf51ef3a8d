//! Reading a change freeze: the stack's Change Calendars and freeze switch (the function's
//! environment: `CHANGE_CALENDARS`, `FREEZE_PARAMETER`) and the plan's `freeze.calendars`.
//!
//! A calendar or switch that cannot be read is taken as frozen (with why in the reason): a
//! freeze only ever holds a rollout where it is, so the safe reading of "unknown" is "frozen";
//! a long outage of SSM ends as frozen too long, within the plan's bound. Admit refuses a plan
//! whose calendars cannot be read at all, before anything moved.

use canary_aws::{AwsErrorKind, CalendarState, FreezeApi};
use canary_core::freeze::{FreezeReading, FreezeSection};

use crate::clients::Env;
use crate::error::AnalysisError;

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
    pub fn from_env(env: Env<'_>) -> Self {
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
    pub async fn check(&self, plan: Option<&FreezeSection>) -> Result<(), AnalysisError> {
        if let Some(parameter) = &self.stack.switch_parameter {
            self.api.switch(parameter).await.map_err(|e| {
                AnalysisError::Freeze {
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
                return Err(AnalysisError::Freeze {
                    path: calendar.path,
                    message: format!("Change Calendar `{}` {why}: {e}", calendar.name),
                    access_denied: e.kind == AwsErrorKind::AccessDenied,
                });
            }
        }
        Ok(())
    }
}

//! `freeze`, `unfreeze`, `freeze status`: the stack's freeze switch (an SSM parameter holding
//! `canary_core::freeze::FreezeSwitch`), which every rollout and fleet of the stack reads before
//! it moves forward (canary_aws::freeze).

use aws_config::SdkConfig;
use aws_smithy_types::date_time::{DateTime, Format};
use canary_aws::{
    CalendarState, EventPublisher, FreezeApi, FreezeSwitchWriter, SdkEvents, SdkFreeze,
};
use canary_core::freeze::{FreezeSwitch, MAX_FREEZE_REASON_BYTES};
use canary_core::limits::truncate;
use serde_json::json;

use crate::args::FreezeArgs;
use crate::error::CliError;
use crate::locate;
use crate::printer::Printer;
use crate::rollout_commands::who;

/// The detail-types of the events the switch's turns are named in.
pub const FROZEN: &str = "Rollouts Frozen";
pub const UNFROZEN: &str = "Rollouts Unfrozen";

fn now() -> String {
    DateTime::from(std::time::SystemTime::now())
        .fmt(Format::DateTime)
        .unwrap_or_default()
}

/// A freeze's reason as a person gives it: said, short, one line.
pub fn checked_reason(reason: Option<&str>) -> Result<String, CliError> {
    let reason = reason.map(str::trim).unwrap_or_default();
    if reason.is_empty() {
        return Err(CliError::Invalid(
            "give --reason TEXT: every held rollout shows why it is frozen (or `freeze status`)"
                .to_owned(),
        ));
    }
    one_line("--reason", reason)
}

/// Who turns the switch (`--by`, else $USER), held to the same line as a reason: it is shown
/// in every held rollout's check and put in the events.
fn checked_by(by: Option<&str>) -> Result<String, CliError> {
    one_line("--by", who(by).trim())
}

fn one_line(flag: &str, text: &str) -> Result<String, CliError> {
    if text.len() > MAX_FREEZE_REASON_BYTES || text.chars().any(char::is_control) {
        return Err(CliError::Invalid(format!(
            "{flag} must be one line of at most {MAX_FREEZE_REASON_BYTES} bytes, got {} bytes",
            text.len()
        )));
    }
    Ok(text.to_owned())
}

/// Writes the switch, then says so with `detail_type` (`Rollouts Frozen` / `Unfrozen`).
async fn turn(
    config: &SdkConfig,
    api: &SdkFreeze,
    parameter: &str,
    switch: &FreezeSwitch,
    detail_type: &str,
) -> Result<(), CliError> {
    api.set_switch(parameter, switch).await?;
    let detail = json!({
        "parameter": parameter,
        "reason": switch.reason,
        "since": switch.since,
        "by": switch.by,
    });
    SdkEvents::new(config)
        .put_or_log(detail_type, &detail)
        .await;
    Ok(())
}

fn switch_json(parameter: &str, switch: &FreezeSwitch) -> serde_json::Value {
    json!({
        "parameter": parameter,
        "frozen": switch.frozen,
        "reason": switch.reason,
        "since": switch.since,
        "by": switch.by,
    })
}

/// Turns the switch on (an empty `reason` is refused before anything is written).
pub async fn freeze(
    config: &SdkConfig,
    reason: Option<&str>,
    args: &FreezeArgs,
    printer: &mut Printer,
) -> Result<(), CliError> {
    let reason = checked_reason(reason)?;
    let by = checked_by(args.by.as_deref())?;
    let parameter = locate::freeze_parameter(config, args).await?;
    let api = SdkFreeze::new(config);
    // A switch that cannot be read (deleted, garbled) is written anew: turning it must work
    // whatever it holds. Only a refusal to write stops the command.
    let before = api.switch(&parameter).await.unwrap_or_default();
    let switch = FreezeSwitch {
        frozen: true,
        reason,
        since: now(),
        by,
    };
    turn(config, &api, &parameter, &switch, FROZEN).await?;
    let was = if before.frozen {
        format!(
            " (it was already, since {}: {})",
            before.since, before.reason
        )
    } else {
        String::new()
    };
    printer.say(
        &format!(
            "frozen{was}: until `cluster-canary unfreeze`, no rollout of the stack starts, no fleet starts a wave, and no rollout moves to a next step its checks decide from now on \
             (each reads the freeze at the check that ends a step's bake: a step whose last check passed before this is still written, within seconds).\n\
             Checks go on: a failing one still rolls back at once, as do alarms, aborts and the safety net. A rollout held past its plan's freeze.maxFrozenSeconds rolls back (frozen too long)."
        ),
        switch_json(&parameter, &switch),
    );
    Ok(())
}

/// Turns the switch off; says so when it was not on.
pub async fn unfreeze(
    config: &SdkConfig,
    args: &FreezeArgs,
    printer: &mut Printer,
) -> Result<(), CliError> {
    let by = checked_by(args.by.as_deref())?;
    let parameter = locate::freeze_parameter(config, args).await?;
    let api = SdkFreeze::new(config);
    // A switch that cannot be read counts as on for every rollout (canary_aws::freeze): writing
    // it off is the way out, so it is written whatever it held.
    let before = match api.switch(&parameter).await {
        Ok(switch) => switch,
        Err(e) => FreezeSwitch {
            frozen: true,
            reason: truncate(
                &format!("the switch could not be read ({e})"),
                MAX_FREEZE_REASON_BYTES,
            ),
            ..FreezeSwitch::default()
        },
    };
    if !before.frozen {
        printer.say(
            "not frozen: the switch is off (a Change Calendar may still hold rollouts: `cluster-canary watch` says which)",
            switch_json(&parameter, &before),
        );
        return Ok(());
    }
    // The reason lifted, as the switch held it: someone else may have written it, so bounded.
    let switch = FreezeSwitch {
        frozen: false,
        reason: truncate(&before.reason, MAX_FREEZE_REASON_BYTES),
        since: now(),
        by,
    };
    turn(config, &api, &parameter, &switch, UNFROZEN).await?;
    let was = if before.since.is_empty() {
        before.reason.clone()
    } else {
        format!(
            "it was frozen since {} by {}: {}",
            before.since, before.by, before.reason
        )
    };
    printer.say(
        &format!("unfrozen ({was}): held rollouts and fleets go on at their next look"),
        switch_json(&parameter, &switch),
    );
    Ok(())
}

/// Whether the switch is on; `Ok(true)` (exit 0) either way.
pub async fn status(
    config: &SdkConfig,
    args: &FreezeArgs,
    printer: &mut Printer,
) -> Result<(), CliError> {
    let parameter = locate::freeze_parameter(config, args).await?;
    let freeze = SdkFreeze::new(config);
    let switch = freeze.switch(&parameter).await?;
    let switch_text = if switch.frozen {
        format!(
            "the freeze switch is on since {} by {}: {}",
            switch.since, switch.by, switch.reason
        )
    } else if switch.since.is_empty() {
        "the freeze switch is off".to_owned()
    } else {
        format!(
            "the freeze switch is off (unfrozen {} by {})",
            switch.since, switch.by
        )
    };
    // The stack's calendars hold every rollout as the switch does: a status without them would
    // say "not frozen" while a CLOSED calendar holds everything. One that cannot be read holds
    // too (a freeze only ever holds).
    let mut lines = vec![switch_text];
    let mut held = switch.frozen;
    let mut calendars = Vec::new();
    match locate::stack_calendars(config, args).await {
        Ok(names) => {
            for name in names {
                let (state, text) = match freeze.calendar_state(&name).await {
                    Ok(reading) if reading.state == CalendarState::Closed => {
                        held = true;
                        let until = reading
                            .next_transition
                            .map(|at| format!(" until {at}"))
                            .unwrap_or_default();
                        ("CLOSED", format!("Change Calendar {name} is CLOSED{until}"))
                    }
                    Ok(_) => ("OPEN", format!("Change Calendar {name} is OPEN")),
                    Err(e) => {
                        held = true;
                        (
                            "UNREADABLE",
                            format!("Change Calendar {name} cannot be read ({e}): rollouts take it as CLOSED"),
                        )
                    }
                };
                calendars.push(json!({"calendar": name, "state": state}));
                lines.push(text);
            }
        }
        Err(e) => lines.push(format!(
            "the stack's Change Calendars were not read ({e}); plans may name more (freeze.calendars)"
        )),
    }
    let verdict = if held {
        "frozen: no rollout of the stack starts or moves to a next step"
    } else {
        "not frozen (plans may name Change Calendars of their own: freeze.calendars)"
    };
    let mut document = switch_json(&parameter, &switch);
    document["calendars"] = json!(calendars);
    document["held"] = json!(held);
    printer.say(&format!("{verdict}\n  {}", lines.join("\n  ")), document);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_is_required_short_and_one_line() {
        assert_eq!(
            checked_reason(Some("  incident 4711 ")).unwrap(),
            "incident 4711"
        );
        for bad in [None, Some(""), Some("   "), Some("two\nlines")] {
            assert!(checked_reason(bad).is_err(), "{bad:?}");
        }
        let long = "x".repeat(MAX_FREEZE_REASON_BYTES + 1);
        let refused = checked_reason(Some(&long)).unwrap_err().to_string();
        assert!(refused.contains("at most 256 bytes"), "{refused}");
        assert_eq!(checked_by(Some(" oncall ")).unwrap(), "oncall");
        let by = checked_by(Some(&long)).unwrap_err().to_string();
        assert!(by.starts_with("--by must be one line"), "{by}");
        assert!(checked_by(Some("a\tb")).is_err());
    }
}

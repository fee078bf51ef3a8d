//! Times as Step Functions writes them into an execution's state (`$$.State.EnteredTime`,
//! `$$.Execution.StartTime`), and as AWS Health writes them into its events.

use std::time::SystemTime;

use aws_smithy_types::date_time::Format;
use aws_smithy_types::DateTime;

/// An RFC 3339 UTC time as Step Functions writes it (`2026-11-22T10:03:00.192Z`), or with the
/// offset spelled `+00:00` (as some emulators do; Smithy's parser refuses offsets).
pub fn utc_time(text: &str) -> Option<SystemTime> {
    let zulu = match text.strip_suffix("+00:00") {
        Some(rest) => format!("{rest}Z"),
        None => text.to_owned(),
    };
    let at = DateTime::from_str(&zulu, Format::DateTime).ok()?;
    SystemTime::try_from(at).ok()
}

/// An HTTP date (IMF-fixdate), as AWS Health gives an event's `startTime` and
/// `lastUpdatedTime` (`Fri, 27 Jan 2023 06:02:51 GMT`).
pub fn http_date(text: &str) -> Option<SystemTime> {
    let at = DateTime::from_str(text, Format::HttpDate).ok()?;
    SystemTime::try_from(at).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn times_in_either_utc_spelling() {
        let at = UNIX_EPOCH + Duration::from_millis(1_794_990_400_192);
        assert_eq!(utc_time("2026-11-18T08:26:40.192Z"), Some(at));
        assert_eq!(utc_time("2026-11-18T08:26:40.192000+00:00"), Some(at));
        assert_eq!(utc_time("yesterday"), None);
    }

    #[test]
    fn aws_health_times() {
        let at = UNIX_EPOCH + Duration::from_secs(1_674_799_371);
        assert_eq!(http_date("Fri, 27 Jan 2023 06:02:51 GMT"), Some(at));
        assert_eq!(http_date("2023-01-27T06:02:51Z"), None);
    }
}

//! One error type for every AWS call, classified by what the caller should do about it.

use std::fmt;

use aws_runtime::retries::classifiers::{THROTTLING_ERRORS, TRANSIENT_ERRORS};
use aws_smithy_runtime_api::client::interceptors::context::InterceptorContext;
use aws_smithy_runtime_api::client::retries::classifiers::{ClassifyRetry, RetryAction};
use aws_smithy_types::error::metadata::ProvideErrorMetadata;
use canary_core::ErrorName;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AwsErrorKind {
    /// The named resource does not exist.
    NotFound,
    /// Throttling, timeouts, connection failures, 5xx: retrying may succeed.
    Transient,
    /// The caller's role may not make the call.
    AccessDenied,
    /// Anything else AWS rejected.
    Rejected,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct AwsError {
    pub kind: AwsErrorKind,
    /// The API operation, e.g. `ModifyListener`.
    pub operation: &'static str,
    /// The AWS error code, e.g. `ListenerNotFound`, when AWS gave one.
    pub code: Option<String>,
    pub message: String,
}

impl fmt::Display for AwsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.code {
            Some(code) => write!(f, "{} failed: {code}: {}", self.operation, self.message),
            None => write!(f, "{} failed: {}", self.operation, self.message),
        }
    }
}

/// Error codes that mean "the thing you named is not there", across the services we call.
const NOT_FOUND_CODES: &[&str] = &[
    "ListenerNotFound",
    "RuleNotFound",
    "TargetGroupNotFound",
    "LoadBalancerNotFound",
    "NoSuchHostedZone",
    "NoSuchChange",
    "ExecutionDoesNotExist",
    "StateMachineDoesNotExist",
    "ResourceNotFoundException",
    "NoSuchKey",
    "NoSuchBucket",
    // SSM: a Change Calendar (GetCalendarState) or a parameter that does not exist.
    "InvalidDocument",
    "ParameterNotFound",
    // Global Accelerator.
    "AcceleratorNotFoundException",
    "ListenerNotFoundException",
    "EndpointGroupNotFoundException",
];

/// Error codes that mean "busy now, ask again": Global Accelerator refuses a write while the
/// accelerator's last one is still being applied.
const BUSY_CODES: &[&str] = &["TransactionInProgressException"];

/// Error codes that mean a quota is reached: asking again never helps. Every service we call
/// means that by `LimitExceededException` (Global Accelerator: an 11th endpoint in a group;
/// CloudWatch, Secrets Manager, EventBridge: their resource quotas), although the SDK's
/// standard retry lists it with throttling.
const QUOTA_CODES: &[&str] = &["LimitExceededException"];

/// A retry classifier for an operation's error type `E` that forbids the SDK's own retry of
/// the codes it is given. The SDK's standard strategy retries every code of aws-runtime's
/// `THROTTLING_ERRORS` up to the client's attempts; some of them are refusals the caller
/// handles itself (a busy accelerator, asked again on the router's own schedule) or that no
/// retry lifts (a quota). Forbidden, such an error reaches the caller at the first attempt.
pub struct NotRetried<E> {
    codes: &'static [&'static str],
    _error: std::marker::PhantomData<fn() -> E>,
}

impl<E> NotRetried<E> {
    pub fn new(codes: &'static [&'static str]) -> Self {
        NotRetried {
            codes,
            _error: std::marker::PhantomData,
        }
    }
}

impl<E> fmt::Debug for NotRetried<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NotRetried")
            .field("codes", &self.codes)
            .finish()
    }
}

impl<E> ClassifyRetry for NotRetried<E>
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    fn classify_retry(&self, ctx: &InterceptorContext) -> RetryAction {
        let code = match ctx.output_or_error() {
            Some(Err(error)) => error
                .as_operation_error()
                .and_then(|e| e.downcast_ref::<E>())
                .and_then(|e| e.code()),
            _ => None,
        };
        match code {
            Some(code) if self.codes.contains(&code) => RetryAction::RetryForbidden,
            _ => RetryAction::NoActionIndicated,
        }
    }

    fn name(&self) -> &'static str {
        "NotRetried"
    }
}

/// The codes of a Global Accelerator write the SDK must not retry: a transaction in progress
/// (the router asks again, 1 + 2 + 4 + 8 s, the bound the docs give) and a quota.
pub const GLOBAL_ACCELERATOR_REFUSALS: &[&str] = &[BUSY_CODES[0], QUOTA_CODES[0]];

const ACCESS_DENIED_CODES: &[&str] = &[
    "AccessDenied",
    "AccessDeniedException",
    "UnauthorizedOperation",
    "UnrecognizedClientException",
    "InvalidClientTokenId",
    "ExpiredToken",
];

impl AwsError {
    /// The stable error name a function reports for this error.
    pub fn error_name(&self) -> ErrorName {
        match self.kind {
            AwsErrorKind::NotFound => ErrorName::TargetNotFound,
            AwsErrorKind::Transient => ErrorName::AwsTransient,
            AwsErrorKind::AccessDenied => ErrorName::AwsAccessDenied,
            AwsErrorKind::Rejected => ErrorName::AwsRequestFailed,
        }
    }

    /// The service refused the call as busy now (Global Accelerator's transaction in
    /// progress): the same call may be asked again shortly.
    pub fn is_busy(&self) -> bool {
        self.code
            .as_deref()
            .is_some_and(|code| BUSY_CODES.contains(&code))
    }

    pub fn new(kind: AwsErrorKind, operation: &'static str, message: impl Into<String>) -> Self {
        AwsError {
            kind,
            operation,
            code: None,
            message: message.into(),
        }
    }

    /// Classifies an SDK error. Called after the SDK's own retries are exhausted.
    pub fn from_sdk<E, R>(
        operation: &'static str,
        err: aws_smithy_runtime_api::client::result::SdkError<E, R>,
    ) -> Self
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
        R: fmt::Debug + HasStatus + 'static,
    {
        use aws_smithy_runtime_api::client::result::SdkError;
        let (kind, code, message) = match &err {
            SdkError::ServiceError(ctx) => {
                let service_error = ctx.err();
                let code = service_error.code().map(str::to_owned);
                let status = ctx.raw().status_code();
                let kind = classify(code.as_deref(), status);
                let message = service_error
                    .message()
                    .map(str::to_owned)
                    .unwrap_or_else(|| format!("HTTP {status}"));
                (kind, code, message)
            }
            _ if loading_credentials(&err) => (
                AwsErrorKind::AccessDenied,
                None,
                format!(
                    "no AWS credentials: {}; set AWS_PROFILE (or AWS_ACCESS_KEY_ID and \
                     AWS_SECRET_ACCESS_KEY) and AWS_REGION, as for the AWS CLI",
                    human_chain(&err)
                ),
            ),
            SdkError::TimeoutError(_)
            | SdkError::DispatchFailure(_)
            | SdkError::ResponseError(_) => (AwsErrorKind::Transient, None, human_chain(&err)),
            _ => (AwsErrorKind::Rejected, None, human_chain(&err)),
        };
        AwsError {
            kind,
            operation,
            code,
            message,
        }
    }
}

/// The error and its sources as sentences, `a: b: c`, each said once: what
/// `DisplayErrorContext` prints, without the Rust debug dump it ends with.
fn human_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(err);
    while let Some(e) = next {
        let text = e.to_string();
        if !text.is_empty() && !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = e.source();
    }
    parts.join(": ")
}

/// Whether the call failed before it was sent because no credentials could be loaded.
fn loading_credentials(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(err);
    while let Some(e) = next {
        if e.is::<aws_credential_types::provider::error::CredentialsError>() {
            return true;
        }
        next = e.source();
    }
    false
}

pub(crate) fn classify(code: Option<&str>, status: u16) -> AwsErrorKind {
    match code {
        Some(c) if NOT_FOUND_CODES.contains(&c) => AwsErrorKind::NotFound,
        Some(c) if ACCESS_DENIED_CODES.contains(&c) => AwsErrorKind::AccessDenied,
        Some(c) if QUOTA_CODES.contains(&c) => AwsErrorKind::Rejected,
        Some(c)
            if THROTTLING_ERRORS.contains(&c)
                || TRANSIENT_ERRORS.contains(&c)
                || BUSY_CODES.contains(&c) =>
        {
            AwsErrorKind::Transient
        }
        _ if status >= 500 || status == 429 => AwsErrorKind::Transient,
        _ if status == 403 => AwsErrorKind::AccessDenied,
        _ => AwsErrorKind::Rejected,
    }
}

/// The HTTP status of a raw response, whatever the response type.
pub trait HasStatus {
    fn status_code(&self) -> u16;
}

impl HasStatus for aws_smithy_runtime_api::http::Response {
    fn status_code(&self) -> u16 {
        self.status().as_u16()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification() {
        let cases = [
            (Some("ListenerNotFound"), 400, AwsErrorKind::NotFound),
            (Some("NoSuchHostedZone"), 404, AwsErrorKind::NotFound),
            (Some("Throttling"), 400, AwsErrorKind::Transient),
            (
                Some("PriorRequestNotComplete"),
                400,
                AwsErrorKind::Transient,
            ),
            (Some("InternalFailure"), 500, AwsErrorKind::Transient),
            (None, 503, AwsErrorKind::Transient),
            (Some("AccessDenied"), 403, AwsErrorKind::AccessDenied),
            (None, 403, AwsErrorKind::AccessDenied),
            (Some("ValidationError"), 400, AwsErrorKind::Rejected),
            (Some("InvalidChangeBatch"), 400, AwsErrorKind::Rejected),
            // A quota, though the SDK's standard retry lists it with throttling.
            (Some("LimitExceededException"), 400, AwsErrorKind::Rejected),
            (
                Some("TransactionInProgressException"),
                400,
                AwsErrorKind::Transient,
            ),
        ];
        for (code, status, kind) in cases {
            assert_eq!(classify(code, status), kind, "{code:?} {status}");
        }
    }
}

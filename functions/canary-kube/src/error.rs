//! Kubernetes API errors, classified by what the caller should do, with the API's own message.

use std::fmt;

use canary_core::ErrorName;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KubeErrorKind {
    /// 401 or 403: the function's identity may not do this.
    Permission,
    NotFound,
    /// 409: another field manager owns the fields, or the object already exists.
    Conflict,
    /// 5xx, 429, timeouts, connection failures.
    Transient,
    /// Anything else the API refused, and a connection we could not set up.
    Rejected,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct KubeError {
    pub kind: KubeErrorKind,
    /// What was being done, e.g. `apply Secret argocd/cluster-canary-green`.
    pub action: String,
    pub message: String,
}

impl fmt::Display for KubeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.action, self.message)
    }
}

impl KubeError {
    pub fn new(kind: KubeErrorKind, action: impl Into<String>, message: impl Into<String>) -> Self {
        KubeError {
            kind,
            action: action.into(),
            message: message.into(),
        }
    }

    pub fn from_kube(action: impl Into<String>, error: kube::Error) -> Self {
        let (kind, message) = match &error {
            kube::Error::Api(status) => {
                let kind = match status.code {
                    401 | 403 => KubeErrorKind::Permission,
                    404 => KubeErrorKind::NotFound,
                    409 => KubeErrorKind::Conflict,
                    429 | 500..=599 => KubeErrorKind::Transient,
                    _ => KubeErrorKind::Rejected,
                };
                (
                    kind,
                    format!("{} ({} {})", status.message, status.code, status.reason),
                )
            }
            kube::Error::HyperError(_) | kube::Error::Service(_) => {
                (KubeErrorKind::Transient, error.to_string())
            }
            _ => (KubeErrorKind::Rejected, error.to_string()),
        };
        KubeError {
            kind,
            action: action.into(),
            message,
        }
    }

    pub fn error_name(&self) -> ErrorName {
        match self.kind {
            KubeErrorKind::Permission => ErrorName::KubePermissionDenied,
            KubeErrorKind::NotFound => ErrorName::KubeNotFound,
            KubeErrorKind::Conflict => ErrorName::KubeConflict,
            KubeErrorKind::Transient => ErrorName::KubeTransient,
            KubeErrorKind::Rejected => ErrorName::KubeRequestFailed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    fn api_error(code: u16, reason: &str) -> KubeError {
        let status = Status::failure(&format!("the API says {code}"), reason).with_code(code);
        KubeError::from_kube("apply Secret argocd/x", kube::Error::Api(status.boxed()))
    }

    #[test]
    fn status_codes_map_to_named_errors_with_the_api_message() {
        let cases = [
            (401, "Unauthorized", ErrorName::KubePermissionDenied),
            (403, "Forbidden", ErrorName::KubePermissionDenied),
            (404, "NotFound", ErrorName::KubeNotFound),
            (409, "Conflict", ErrorName::KubeConflict),
            (422, "Invalid", ErrorName::KubeRequestFailed),
            (429, "TooManyRequests", ErrorName::KubeTransient),
            (500, "InternalError", ErrorName::KubeTransient),
            (503, "ServiceUnavailable", ErrorName::KubeTransient),
        ];
        for (code, reason, name) in cases {
            let error = api_error(code, reason);
            assert_eq!(error.error_name(), name, "{code}");
            assert_eq!(
                error.to_string(),
                format!("apply Secret argocd/x: the API says {code} ({code} {reason})")
            );
        }
        assert!(ErrorName::KubeTransient.is_retryable());
    }
}

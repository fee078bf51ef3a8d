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

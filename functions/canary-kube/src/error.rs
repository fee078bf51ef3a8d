//! Kubernetes API errors, classified by what the caller should do, with the API's own message.

use std::fmt;

use canary_core::ErrorName;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KubeErrorKind {
    /// 401 or 403: the function's identity may not do this.
    Permission,
    /// AWS refused what connecting needs (Secrets Manager's `GetSecretValue`, EKS's
    /// `DescribeCluster`): an IAM matter of the function's role, not Kubernetes RBAC.
    AwsPermission,
    NotFound,
    /// 409: another field manager owns the fields, or the object already exists.
    Conflict,
    /// 5xx, 429, timeouts, connection failures.
    Transient,
    /// Anything else the API refused, and a connection we could not set up.
    Rejected,
    /// The TLS handshake failed (unknown CA, a name the certificate does not cover), or the
    /// CA data is not a certificate: the connection settings are wrong, retrying cannot help.
    Tls,
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
            other => {
                let message = describe(other);
                let kind = match (other, cause(other).and_then(tls_failure)) {
                    (_, Some(_)) => KubeErrorKind::Tls,
                    // Refused, reset, timed out: the cause chain says which.
                    (kube::Error::HyperError(_) | kube::Error::Service(_), None) => {
                        KubeErrorKind::Transient
                    }
                    _ => KubeErrorKind::Rejected,
                };
                (kind, message)
            }
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
            KubeErrorKind::AwsPermission => ErrorName::AwsAccessDenied,
            KubeErrorKind::NotFound => ErrorName::KubeNotFound,
            KubeErrorKind::Conflict => ErrorName::KubeConflict,
            KubeErrorKind::Transient => ErrorName::KubeTransient,
            KubeErrorKind::Rejected => ErrorName::KubeRequestFailed,
            KubeErrorKind::Tls => ErrorName::KubeTlsFailed,
        }
    }
}

/// The error a kube error wraps, for the variants a client built by `access::client` can give.
///
/// Never `&kube::Error` as `&dyn Error`: kube's own `Display` and `source` reach its kubeconfig
/// and exec-auth errors, and through them a YAML parser's error renderer, which would be linked
/// into every package that reaches Kubernetes (docs/size-and-startup.md).
fn cause(error: &kube::Error) -> Option<&(dyn std::error::Error + 'static)> {
    match error {
        kube::Error::HyperError(e) => Some(e),
        kube::Error::Service(e) => Some(e.as_ref()),
        kube::Error::FromUtf8(e) => Some(e),
        kube::Error::ReadEvents(e) => Some(e),
        kube::Error::HttpError(e) => Some(e),
        kube::Error::SerdeError(e) => Some(e),
        kube::Error::BuildRequest(e) => Some(e),
        kube::Error::RustlsTls(e) => Some(e),
        _ => None,
    }
}

/// A kube error's text with its causes, labelled as kube labels it.
fn describe(error: &kube::Error) -> String {
    let label = match error {
        kube::Error::HyperError(_) => "HyperError",
        kube::Error::Service(_) => "ServiceError",
        kube::Error::FromUtf8(_) => "UTF-8 Error",
        kube::Error::ReadEvents(_) => "Error reading events stream",
        kube::Error::HttpError(_) => "HttpError",
        kube::Error::SerdeError(_) => "Error deserializing response",
        kube::Error::BuildRequest(_) => "Failed to build request",
        kube::Error::RustlsTls(_) => "rustls tls error",
        kube::Error::LinesCodecMaxLineLengthExceeded => {
            return "Error finding newline character".to_owned()
        }
        // Kubeconfig inference, discovery, proxies, OpenSSL, upgrades, auth plugins: a client
        // assembled by `access::client` uses none of them.
        _ => return "kube client error from a feature cluster-canary does not use".to_owned(),
    };
    match cause(error) {
        Some(inner) => format!("{label}: {}", with_causes(inner)),
        None => label.to_owned(),
    }
}

/// The rustls error anywhere in `error`'s source chain. hyper-rustls hands it over wrapped in
/// an `io::Error` (itself wrapped in another), and `io::Error::source()` skips the error it
/// wraps, so the walk steps into each wrapped error instead.
pub fn tls_failure<'e>(error: &'e (dyn std::error::Error + 'static)) -> Option<&'e rustls::Error> {
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        next = match e
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
        {
            Some(wrapped) => Some(wrapped),
            None => e.source(),
        };
    }
    None
}

/// The error and each distinct cause under it, `: `-joined. hyper's own text is only
/// "client error (Connect)"; the cause ("Connection refused", "invalid peer certificate:
/// UnknownIssuer") is what a person can act on.
pub fn with_causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut next = error.source();
    let mut seen_tls = false;
    while let Some(e) = next {
        let line = e.to_string();
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        if let (false, Some(tls)) = (seen_tls, tls_failure(e)) {
            seen_tls = true;
            let tls = tls.to_string();
            if !text.contains(&tls) {
                text.push_str(": ");
                text.push_str(&tls);
            }
        }
        next = e.source();
    }
    text
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

    #[test]
    fn a_tls_error_is_found_inside_nested_io_errors() {
        use std::io;
        let tls = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let wrapped = io::Error::other(io::Error::new(io::ErrorKind::InvalidData, tls.clone()));
        assert_eq!(tls_failure(&wrapped), Some(&tls));
        assert_eq!(
            tls_failure(&io::Error::from(io::ErrorKind::ConnectionRefused)),
            None
        );
    }

    #[test]
    fn other_kube_errors_read_as_kube_labels_them_with_their_causes() {
        let not_json = serde_json::from_str::<serde_json::Value>("<html>").unwrap_err();
        let error = KubeError::from_kube("list Applications", kube::Error::SerdeError(not_json));
        assert_eq!(error.error_name(), ErrorName::KubeRequestFailed);
        assert_eq!(
            error.to_string(),
            "list Applications: Error deserializing response: expected value at line 1 column 1"
        );

        let tls = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let handshake = std::io::Error::other(tls);
        let error =
            KubeError::from_kube("list Applications", kube::Error::Service(handshake.into()));
        assert_eq!(error.error_name(), ErrorName::KubeTlsFailed);
        assert!(error.message.starts_with("ServiceError: "), "{error}");
        assert!(error.message.contains("UnknownIssuer"), "{error}");

        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let error = KubeError::from_kube("list Applications", kube::Error::Service(refused.into()));
        assert_eq!(error.error_name(), ErrorName::KubeTransient);
        assert_eq!(
            error.to_string(),
            "list Applications: ServiceError: connection refused"
        );
    }
}

//! One error for the query providers that are HTTP APIs (Prometheus and AMP, Datadog): what a
//! query that got no number met, whichever provider. The mapping from an answer's status to an
//! error, and from an error to the name the state machine sees, is written once here; a
//! provider's client brings its wording ([`Provider`]), how it reads the error text out of its
//! own answers, and its credentials' failures ([`QueryError::Credentials`]).

use canary_core::ErrorName;

use crate::http::{first_bytes, HttpFailure, MAX_ANSWER_BYTES};

/// What differs between the providers' APIs: the wording of two errors, and the statuses
/// that say a query is at fault. Each provider's client module has its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Provider {
    /// What a 401/403 refused: the query (a role or network path that may not query), or the
    /// keys.
    pub refuses: &'static str,
    /// What an unexpected answer is not, e.g. "the Prometheus API's JSON".
    pub api: &'static str,
    /// The statuses with which the provider says a query does not parse or breaks its limits.
    pub rejects_queries_with: &'static [u16],
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// No answer: refused, reset, timed out, a name that does not resolve, a TLS failure.
    #[error("cannot reach {url}: {message}")]
    Unreachable { url: String, message: String },
    /// 401 or 403: the provider refused the caller (a role or network path that may not
    /// query; keys wrong, revoked or without the permission to query).
    #[error("{url} refused {} ({status}): {message}", .provider.refuses)]
    Refused {
        provider: Provider,
        url: String,
        status: u16,
        message: String,
    },
    /// The query does not parse, or breaks the provider's limits.
    #[error("{url} rejected the query ({status}): {message}")]
    QueryRejected {
        url: String,
        status: u16,
        message: String,
    },
    /// 429 (after a provider's own retries) or 5xx: retrying later may succeed.
    #[error("{url} failed ({status}): {message}")]
    Unavailable {
        url: String,
        status: u16,
        message: String,
    },
    #[error("{url} answered more than {MAX_ANSWER_BYTES} bytes: the query selects more than a check can judge")]
    AnswerTooLarge { url: String },
    /// Not the provider's API (a proxy's page, a wrong path).
    #[error("{url} answered {status} with something that is not {}: {first_bytes:?}", .provider.api)]
    NotTheApi {
        provider: Provider,
        url: String,
        status: u16,
        first_bytes: String,
    },
    /// The function could not present its credentials (sign for AMP, read Datadog's keys):
    /// the provider's own words, and the name its cause has (a Secrets Manager failure keeps
    /// its own).
    #[error("{message}")]
    Credentials { name: ErrorName, message: String },
}

impl QueryError {
    /// A request that got no usable answer.
    pub fn from_http(url: &str, failure: HttpFailure) -> QueryError {
        match failure {
            HttpFailure::Unreachable(message) => QueryError::Unreachable {
                url: url.to_owned(),
                message,
            },
            HttpFailure::TooLarge => QueryError::AnswerTooLarge {
                url: url.to_owned(),
            },
        }
    }

    /// An answer whose status is not a success, or a success that is not the provider's
    /// document. `said` is the error text the provider put in its answer, if any.
    pub fn from_answer(
        provider: Provider,
        url: &str,
        status: u16,
        said: Option<String>,
        body: &[u8],
    ) -> QueryError {
        let url = url.to_owned();
        let message = || said.clone().unwrap_or_else(|| first_bytes(body));
        match status {
            // Without the provider's words a 400 may come from anything in between.
            s if provider.rejects_queries_with.contains(&s) && said.is_some() => {
                QueryError::QueryRejected {
                    url,
                    status,
                    message: message(),
                }
            }
            401 | 403 => QueryError::Refused {
                provider,
                url,
                status,
                message: message(),
            },
            429 | 500..=599 => QueryError::Unavailable {
                url,
                status,
                message: message(),
            },
            _ => QueryError::NotTheApi {
                provider,
                url,
                status,
                first_bytes: first_bytes(body),
            },
        }
    }

    /// The function's credentials refused before any request: `MetricsProviderRefused`.
    pub fn credentials(message: impl Into<String>) -> QueryError {
        QueryError::Credentials {
            name: ErrorName::MetricsProviderRefused,
            message: message.into(),
        }
    }

    pub fn error_name(&self) -> ErrorName {
        match self {
            QueryError::Unreachable { .. } | QueryError::Unavailable { .. } => {
                ErrorName::MetricsProviderUnavailable
            }
            QueryError::QueryRejected { .. } | QueryError::AnswerTooLarge { .. } => {
                ErrorName::InvalidPlan
            }
            QueryError::Refused { .. } | QueryError::NotTheApi { .. } => {
                ErrorName::MetricsProviderRefused
            }
            QueryError::Credentials { name, .. } => *name,
        }
    }

    /// The query's own fault (it does not parse, or asks too much), not the provider's.
    pub fn is_about_the_query(&self) -> bool {
        self.error_name() == ErrorName::InvalidPlan
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datadog::DATADOG as Datadog;
    use crate::prometheus::PROMETHEUS as Prometheus;

    #[test]
    fn a_provider_words_its_refusals_and_its_api() {
        let url = "https://example/api";
        let refused = |provider| QueryError::from_answer(provider, url, 403, None, b"no");
        assert_eq!(
            refused(Prometheus).to_string(),
            "https://example/api refused the query (403): no"
        );
        assert_eq!(
            refused(Datadog).to_string(),
            "https://example/api refused the keys (403): no"
        );
        let page = |provider| QueryError::from_answer(provider, url, 404, None, b"<html>");
        assert_eq!(
            page(Prometheus).to_string(),
            "https://example/api answered 404 with something that is not the Prometheus API's JSON: \"<html>\""
        );
        assert_eq!(
            page(Datadog).to_string(),
            "https://example/api answered 404 with something that is not Datadog's API: \"<html>\""
        );
    }

    #[test]
    fn statuses_map_to_the_names_the_state_machine_catches() {
        let said = || Some("bad".to_owned());
        let name = |provider, status, said| {
            QueryError::from_answer(provider, "u", status, said, b"").error_name()
        };
        assert_eq!(name(Prometheus, 422, said()), ErrorName::InvalidPlan);
        assert_eq!(name(Datadog, 400, said()), ErrorName::InvalidPlan);
        // Datadog does not say 422 about a query; a 400 without the provider's words is
        // not known to be about the query.
        assert_eq!(
            name(Datadog, 422, said()),
            ErrorName::MetricsProviderRefused
        );
        assert_eq!(
            name(Prometheus, 400, None),
            ErrorName::MetricsProviderRefused
        );
        assert_eq!(
            name(Datadog, 429, None),
            ErrorName::MetricsProviderUnavailable
        );
        assert_eq!(
            name(Prometheus, 503, None),
            ErrorName::MetricsProviderUnavailable
        );
        assert_eq!(
            QueryError::from_http("u", HttpFailure::TooLarge).error_name(),
            ErrorName::InvalidPlan
        );
        assert_eq!(
            QueryError::from_http("u", HttpFailure::Unreachable("reset".into())).to_string(),
            "cannot reach u: reset"
        );
        assert_eq!(
            QueryError::credentials("no keys").error_name(),
            ErrorName::MetricsProviderRefused
        );
    }
}

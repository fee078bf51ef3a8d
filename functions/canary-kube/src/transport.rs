//! The Kubernetes client's HTTP transport: the AWS SDK's own HTTPS connector (hyper 1, rustls
//! on ring), trusting only the management cluster's CA.
//!
//! A function that reaches Kubernetes already links the SDK's connector for its AWS calls; a
//! second hyper client of its own (hyper-util's, hyper-rustls, hyper-timeout), instantiated for
//! kube's body and stream types, cost shift-weights about 0.2 MB zipped and put it over the 3 MB
//! goal (docs/size-and-startup.md). kube's client takes any tower service: this one hands
//! kube's requests to the SDK's connector and its answers back.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider, TlsContext, TrustStore};
use aws_smithy_http_client::Connector;
use aws_smithy_runtime_api::client::http::{HttpConnector, HttpConnectorSettings};
use aws_smithy_runtime_api::http::Request as SmithyRequest;
use aws_smithy_types::body::SdkBody;
use http_body_util::BodyExt;
use kube::client::Body;
use tower::BoxError;

/// Longest wait for a TCP connection and TLS handshake.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest wait for the first byte of an answer.
const READ_TIMEOUT: Duration = Duration::from_secs(20);

/// HTTPS (or plain HTTP) to the Kubernetes API through the SDK's connector.
#[derive(Clone)]
pub struct SdkTransport {
    connector: Arc<Connector>,
}

impl SdkTransport {
    /// Trusting only `ca`, the PEM certificates of the cluster's CA. They must be valid PEM
    /// certificates rustls accepts (the SDK's connector panics on one that is not): the caller
    /// has checked them (`access::trusted`).
    pub fn trusting(ca: &[String]) -> Result<Self, String> {
        let trust = ca.iter().fold(
            TrustStore::empty().with_native_roots(false),
            |trust, pem| trust.with_pem_certificate(pem.as_bytes()),
        );
        let tls = TlsContext::builder()
            .with_trust_store(trust)
            .build()
            .map_err(|e| format!("cannot build the TLS settings: {e}"))?;
        let connector = Connector::builder()
            .connector_settings(
                HttpConnectorSettings::builder()
                    .connect_timeout(CONNECT_TIMEOUT)
                    .read_timeout(READ_TIMEOUT)
                    .build(),
            )
            .tls_provider(Provider::Rustls(CryptoMode::Ring))
            .tls_context(tls)
            .build();
        Ok(SdkTransport {
            connector: Arc::new(connector),
        })
    }
}

type Answer = http::Response<SdkBody>;

impl tower::Service<http::Request<Body>> for SdkTransport {
    type Response = Answer;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Answer, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let connector = Arc::clone(&self.connector);
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            // kube's bodies for our calls are whole JSON documents, in memory. Its error is
            // not passed on: kube's error type reaches its kubeconfig errors (access.rs).
            let body = body
                .collect()
                .await
                .map_err(|_| std::io::Error::other("the request body failed"))?
                .to_bytes();
            let request =
                SmithyRequest::try_from(http::Request::from_parts(parts, SdkBody::from(body)))?;
            Ok(connector.call(request).await?.try_into_http1x()?)
        })
    }
}

//! The bearer token for an EKS cluster's Kubernetes API, minted locally from AWS credentials
//! the way `aws eks get-token` and aws-iam-authenticator do: a SigV4-presigned STS
//! `GetCallerIdentity` URL that also signs the `x-k8s-aws-id` header (the cluster name),
//! prefixed `k8s-aws-v1.` and encoded as unpadded base64url. EKS accepts it for 15 minutes
//! after its `X-Amz-Date`; the 60 s `X-Amz-Expires` is what the tools send and is ignored.

use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{
    sign, SignableBody, SignableRequest, SignatureLocation, SigningSettings,
};
use aws_sigv4::sign::v4;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

const CLUSTER_ID_HEADER: &str = "x-k8s-aws-id";

#[derive(Debug, thiserror::Error)]
#[error("cannot sign the EKS token request: {0}")]
pub struct TokenError(String);

/// A token for `cluster_name`, signed with `credentials` for `region`'s STS endpoint at `now`.
pub fn eks_token(
    credentials: &Credentials,
    region: &str,
    cluster_name: &str,
    now: SystemTime,
) -> Result<String, TokenError> {
    let base =
        format!("https://sts.{region}.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15");
    let mut settings = SigningSettings::default();
    settings.signature_location = SignatureLocation::QueryParams;
    settings.expires_in = Some(Duration::from_secs(60));
    let identity = credentials.clone().into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name("sts")
        .time(now)
        .settings(settings)
        .build()
        .map_err(|e| TokenError(e.to_string()))?
        .into();
    let headers = [(CLUSTER_ID_HEADER, cluster_name)];
    let signable =
        SignableRequest::new("GET", &base, headers.into_iter(), SignableBody::Bytes(&[]))
            .map_err(|e| TokenError(e.to_string()))?;
    let (instructions, _signature) = sign(signable, &params)
        .map_err(|e| TokenError(e.to_string()))?
        .into_parts();
    let mut request = http::Request::builder()
        .method("GET")
        .uri(&base)
        .body(())
        .map_err(|e| TokenError(e.to_string()))?;
    instructions.apply_to_request_http1x(&mut request);
    let url = signature_last(&request.uri().to_string());
    Ok(format!("k8s-aws-v1.{}", URL_SAFE_NO_PAD.encode(url)))
}

/// aws-sigv4 appends `X-Amz-Security-Token` after `X-Amz-Signature`; botocore (and so
/// `aws eks get-token`) puts the signature last. Both verify; we match botocore byte for byte
/// so tokens are comparable with the reference tools.
fn signature_last(url: &str) -> String {
    let Some((base, query)) = url.split_once('?') else {
        return url.to_owned();
    };
    let (signature, mut rest): (Vec<&str>, Vec<&str>) = query
        .split('&')
        .partition(|p| p.starts_with("X-Amz-Signature="));
    rest.extend(signature);
    format!("{base}?{}", rest.join("&"))
}

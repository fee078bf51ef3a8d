//! The EKS token must be byte-identical to what botocore's presigner (what `aws eks get-token`
//! uses) produces for the same credentials, region, cluster and time. botocore runs from the
//! test venv.

use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_credential_types::Credentials;
use canary_kube::token::eks_token;

const BOTOCORE_TOKEN: &str = r#"
import base64, datetime, sys
from unittest import mock
import botocore.auth
import botocore.session

# botocore's own SigV4 presigner. (With awscrt installed, as the SAM CLI installs it, botocore
# switches to the CRT signer: same signature, two query parameters in another order.)
botocore.auth.AUTH_TYPE_MAPS["v4"] = botocore.auth.SigV4Auth
botocore.auth.AUTH_TYPE_MAPS["v4-query"] = botocore.auth.SigV4QueryAuth

key, secret, session_token, region, cluster, epoch = sys.argv[1:7]
session = botocore.session.get_session()
session.set_credentials(key, secret, session_token or None)
sts = session.create_client("sts", region_name=region)

# What awscli's `eks get-token` does: pass the cluster name as a client parameter and sign it
# as the x-k8s-aws-id header.
def inject(params, context, **kwargs):
    if "ClusterName" in params:
        context["eks_cluster"] = params.pop("ClusterName")

def header(request, **kwargs):
    if "eks_cluster" in request.context:
        request.headers["x-k8s-aws-id"] = request.context["eks_cluster"]

sts.meta.events.register("provide-client-params.sts.GetCallerIdentity", inject)
sts.meta.events.register("before-sign.sts.GetCallerIdentity", header)
fixed = datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc).replace(tzinfo=None)
with mock.patch("botocore.auth.get_current_datetime", return_value=fixed):
    url = sts.generate_presigned_url(
        "get_caller_identity", Params={"ClusterName": cluster}, ExpiresIn=60, HttpMethod="GET"
    )
print("k8s-aws-v1." + base64.urlsafe_b64encode(url.encode()).decode().rstrip("="))
"#;

fn python() -> std::path::PathBuf {
    std::env::var_os("PYTHON")
        .map(Into::into)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python")
        })
}

fn botocore_token(
    key: &str,
    secret: &str,
    session: &str,
    region: &str,
    cluster: &str,
    epoch: u64,
) -> String {
    let out = Command::new(python())
        .args([
            "-c",
            BOTOCORE_TOKEN,
            key,
            secret,
            session,
            region,
            cluster,
            &epoch.to_string(),
        ])
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env_remove("AWS_PROFILE")
        .output()
        .expect("run python with botocore (scripts/setup.sh)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_owned()
}

#[test]
fn token_is_byte_identical_to_botocore() {
    let epoch = 1_795_000_000;
    let now = UNIX_EPOCH + Duration::from_secs(epoch);
    for (session, region, cluster) in [
        ("", "us-east-1", "argocd-hub"),
        (
            "FwoGZXIvYXdzEXAMPLESESSIONTOKEN+/=",
            "eu-central-1",
            "mgmt_cluster-2",
        ),
    ] {
        let credentials = Credentials::new(
            "AKIDEXAMPLE",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            (!session.is_empty()).then(|| session.to_owned()),
            None,
            "test",
        );
        let ours = eks_token(&credentials, region, cluster, now).expect("token");
        let theirs = botocore_token(
            "AKIDEXAMPLE",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            session,
            region,
            cluster,
            epoch,
        );
        assert_eq!(
            ours, theirs,
            "session token {session:?}, region {region}, cluster {cluster}"
        );
    }
    // And it changes with the time it was signed at.
    let credentials = Credentials::new("AKIDEXAMPLE", "secret", None, None, "test");
    assert_ne!(
        eks_token(&credentials, "us-east-1", "c", now).unwrap(),
        eks_token(&credentials, "us-east-1", "c", SystemTime::now()).unwrap()
    );
}

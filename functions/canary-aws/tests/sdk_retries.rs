//! Which refusals the SDK tries again, over the wire: the real Global Accelerator client
//! (`SdkGlobalAccelerator`, with the functions' retry configuration) against a loopback server
//! that answers every request with one error, as Global Accelerator's JSON protocol does, and
//! counts the requests. The SDK's standard retry takes `TransactionInProgressException` and
//! `LimitExceededException` for throttling; the client must not: the router asks a busy
//! accelerator again on its own schedule, and a quota is never lifted by asking.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use aws_config::retry::RetryConfig;
use aws_config::Region;
use aws_credential_types::Credentials;
use canary_aws::{AwsErrorKind, GlobalAcceleratorApi, SdkGlobalAccelerator};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Answers every request with `code` (HTTP 400, awsJson1_1's error shape) and counts them. One
/// request per connection: the answer closes it.
async fn refusing(code: &'static str) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let url = format!("http://{}", listener.local_addr().expect("its address"));
    let requests = Arc::new(AtomicUsize::new(0));
    let counted = requests.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let counted = counted.clone();
            tokio::spawn(async move {
                let mut read = Vec::new();
                let mut buffer = [0u8; 4096];
                // The headers, then as much body as Content-Length says.
                loop {
                    let Ok(n) = stream.read(&mut buffer).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    read.extend_from_slice(&buffer[..n]);
                    let text = String::from_utf8_lossy(&read).to_string();
                    if let Some(end) = text.find("\r\n\r\n") {
                        let length = text[..end]
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().to_owned())
                            })
                            .and_then(|v| v.parse::<usize>().ok())
                            .unwrap_or(0);
                        if read.len() >= end + 4 + length {
                            break;
                        }
                    }
                }
                counted.fetch_add(1, Ordering::SeqCst);
                let body = format!(r#"{{"__type":"{code}","Message":"refused by the test"}}"#);
                let answer = format!(
                    "HTTP/1.1 400 Bad Request\r\nContent-Type: application/x-amz-json-1.1\r\n\
                     x-amzn-ErrorType: {code}\r\nx-amzn-RequestId: 0c6a2d4e-test\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(answer.as_bytes()).await;
            });
        }
    });
    (url, requests)
}

/// The client as the functions build it (their HTTP client and five attempts), the backoff
/// cut to milliseconds so that the throttling case, tried five times, stays quick.
async fn client(url: &str) -> SdkGlobalAccelerator {
    let config = canary_aws::sdk_config_loader()
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "test"))
        .endpoint_url(url)
        .retry_config(
            RetryConfig::standard()
                .with_max_attempts(5)
                .with_initial_backoff(Duration::from_millis(1))
                .with_max_backoff(Duration::from_millis(5)),
        )
        .load()
        .await;
    SdkGlobalAccelerator::new(&config, Duration::from_millis(1))
}

async fn attempts_for(code: &'static str) -> (usize, canary_aws::AwsError) {
    let (url, requests) = refusing(code).await;
    let group = "arn:aws:globalaccelerator::123456789012:accelerator/a/listener/l/endpoint-group/g";
    let refused = client(&url)
        .await
        .set_endpoints(group, &[])
        .await
        .expect_err("every answer is an error");
    (requests.load(Ordering::SeqCst), refused)
}

#[tokio::test]
async fn a_quota_is_asked_once_and_is_a_refusal() {
    let (asked, refused) = attempts_for("LimitExceededException").await;
    assert_eq!(asked, 1, "{refused}");
    assert_eq!(refused.kind, AwsErrorKind::Rejected, "{refused}");
    assert_eq!(refused.code.as_deref(), Some("LimitExceededException"));
}

#[tokio::test]
async fn a_transaction_in_progress_is_asked_once_the_router_asks_again() {
    let (asked, refused) = attempts_for("TransactionInProgressException").await;
    assert_eq!(asked, 1, "{refused}");
    assert!(refused.is_busy(), "{refused}");
}

#[tokio::test]
async fn a_throttle_is_still_tried_again_by_the_sdk() {
    let (asked, refused) = attempts_for("ThrottlingException").await;
    assert_eq!(asked, 5, "{refused}");
    assert_eq!(refused.kind, AwsErrorKind::Transient, "{refused}");
}

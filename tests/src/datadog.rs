//! The Datadog API test double (`tests/datadog/datadog_api_server.py`; its header says what
//! it refuses and what it does not model) on a free loopback port.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

use crate::{python, repo_root, start_announcing};

pub struct DatadogServer {
    child: Child,
    /// Replaces `https://api.<site>`: what `DATADOG_API_URL` is set to.
    pub url: String,
}

impl DatadogServer {
    /// A server that accepts `api_key` and `app_key` and answers `values`
    /// (`{"metric{tags}": value}`); `extra` e.g. `["--rate-limit", "1"]`.
    pub fn start(
        api_key: &str,
        app_key: &str,
        values: &serde_json::Value,
        extra: &[&str],
    ) -> DatadogServer {
        let (child, ready) = start_announcing(
            Command::new(python())
                .arg(repo_root().join("tests/datadog/datadog_api_server.py"))
                .args(["--api-key", api_key, "--app-key", app_key])
                .args(["--values", &values.to_string()])
                .args(extra)
                .stderr(Stdio::inherit()),
            "start datadog_api_server.py: run scripts/setup.sh first",
        );
        DatadogServer {
            url: ready["url"].as_str().unwrap_or_default().to_owned(),
            child,
        }
    }

    /// `{"requests": n, "limited": m}`: the scalar queries it got, and how many it answered 429.
    pub fn requests(&self) -> serde_json::Value {
        let address = self.url.trim_start_matches("http://");
        let mut stream = TcpStream::connect(address).expect("the Datadog test server");
        write!(
            stream,
            "GET /_test/requests HTTP/1.0\r\nHost: {address}\r\n\r\n"
        )
        .expect("a request");
        let mut answer = String::new();
        stream.read_to_string(&mut answer).expect("an answer");
        let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
        serde_json::from_str(body).expect("JSON")
    }
}

impl Drop for DatadogServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

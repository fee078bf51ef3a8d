//! A real Prometheus server (Debian's `prometheus` package, which `scripts/setup.sh` installs)
//! on a free loopback port, its TSDB backfilled with `promtool tsdb create-blocks-from
//! openmetrics` before it starts: the samples are exactly the test's, at the times it says.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A running Prometheus, killed and its data removed when dropped.
pub struct PrometheusServer {
    child: Child,
    dir: PathBuf,
    /// The HTTP API's base URL, `http://127.0.0.1:<port>`.
    pub url: String,
}

impl PrometheusServer {
    /// Starts Prometheus over `openmetrics` (OpenMetrics text, timestamps in seconds, ending
    /// with `# EOF`).
    pub fn start(openmetrics: &str) -> PrometheusServer {
        static SERVERS: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "cluster-canary-prometheus-{}-{}",
            std::process::id(),
            SERVERS.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let data = dir.join("data");
        std::fs::create_dir_all(&data).expect("a temporary directory");
        std::fs::write(dir.join("samples.om"), openmetrics).expect("write the samples");
        std::fs::write(dir.join("prometheus.yml"), "global: {}\n").expect("write the config");
        let backfill = Command::new("promtool")
            .args(["tsdb", "create-blocks-from", "openmetrics"])
            .arg(dir.join("samples.om"))
            .arg(&data)
            .output()
            .expect("run promtool: scripts/setup.sh installs Debian's prometheus package");
        assert!(
            backfill.status.success(),
            "promtool refused the samples: {}",
            String::from_utf8_lossy(&backfill.stderr)
        );
        for _ in 0..5 {
            let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
                .and_then(|l| l.local_addr())
                .expect("a free loopback port")
                .port();
            let mut child = Command::new("prometheus")
                .arg(format!(
                    "--config.file={}",
                    dir.join("prometheus.yml").display()
                ))
                .arg(format!("--storage.tsdb.path={}", data.display()))
                .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start prometheus: scripts/setup.sh installs it");
            let deadline = Instant::now() + Duration::from_secs(60);
            while Instant::now() < deadline {
                if ready(port) {
                    return PrometheusServer {
                        child,
                        dir,
                        url: format!("http://127.0.0.1:{port}"),
                    };
                }
                if matches!(child.try_wait(), Ok(Some(_))) {
                    break; // the port was taken before it bound: try another
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("prometheus did not start");
    }
}

/// `GET /-/ready` answers 200 once the TSDB is loaded.
fn ready(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect((Ipv4Addr::LOCALHOST, port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream
        .write_all(b"GET /-/ready HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.starts_with("HTTP/1.0 200") || answer.starts_with("HTTP/1.1 200")
}

impl Drop for PrometheusServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

//! Test harness: a moto server (the AWS emulator, in server mode) per test on a loopback
//! port of its own choosing, seeded by `tests/moto/seed_world.py`, and SDK clients pointed at it.
//! Credentials are dummies; nothing leaves 127.0.0.1.
//!
//! moto comes from the venv `scripts/setup.sh` creates (`.venv/`), or from `PYTHON` when set.
//! It is started through `tests/moto/moto_server.py`, which is stock `moto_server` plus the
//! PutCompositeAlarm action moto lacks.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use aws_config::{Region, SdkConfig};
use aws_sdk_elasticloadbalancingv2 as elbv2;
use aws_sdk_route53 as route53;
use serde::Deserialize;
use serde_json::Value;

pub mod contract;
pub mod datadog;
pub mod prometheus;

pub const REGION: &str = "us-east-1";

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The Python that has moto and boto3: `PYTHON`, else the setup script's venv.
pub fn python() -> PathBuf {
    std::env::var_os("PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".venv/bin/python"))
}

/// A moto server on its own port, killed when dropped.
pub struct Moto {
    child: Child,
    pub endpoint: String,
}

impl Moto {
    pub fn start() -> Moto {
        // Port 0: moto binds a port of its own and announces it. A port we picked and handed
        // over could be taken by another test's server first, and then a check that it
        // answers would find that server instead of moto.
        let (child, ready) = start_announcing(
            Command::new(python())
                .arg(repo_root().join("tests/moto/moto_server.py"))
                .args(["-H", "127.0.0.1", "-p", "0"])
                .env("AWS_ACCESS_KEY_ID", "test")
                .env("AWS_SECRET_ACCESS_KEY", "test")
                .env("AWS_EC2_METADATA_DISABLED", "true")
                .stderr(Stdio::null()),
            "start moto_server: run scripts/setup.sh first",
        );
        Moto {
            endpoint: ready["endpoint"].as_str().unwrap_or_default().to_owned(),
            child,
        }
    }

    /// SDK configuration for this server: its endpoint, dummy static credentials (so the
    /// SDK never looks for instance metadata), the functions' retry settings.
    pub async fn sdk_config(&self) -> SdkConfig {
        canary_aws::sdk_config_loader()
            .endpoint_url(&self.endpoint)
            .region(Region::new(REGION))
            .credentials_provider(elbv2::config::Credentials::new(
                "test",
                "test",
                None,
                None,
                "cluster-canary-tests",
            ))
            .load()
            .await
    }

    /// Sets what EKS computes itself (tests/moto/harness_eks.py): `path` after
    /// `/_harness/eks/`, e.g. `123456789012/us-east-1/clusters/green/insights`.
    pub fn set_eks(&self, path: &str, body: &Value) {
        let output = Command::new(python())
            .arg(repo_root().join("tests/moto/harness_eks.py"))
            .args([&self.endpoint, path, &body.to_string()])
            .output()
            .expect("run harness_eks.py");
        assert!(
            output.status.success(),
            "harness_eks.py {path} refused: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// Seeds the world described in `tests/moto/seed_world.py`.
    pub fn seed(&self) -> World {
        let output = Command::new(python())
            .arg(repo_root().join("tests/moto/seed_world.py"))
            .arg(&self.endpoint)
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .output()
            .expect("run seed_world.py");
        assert!(
            output.status.success(),
            "seed_world.py failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).expect("seed_world.py prints the world as JSON")
    }
}

/// The Kubernetes API test server (`tests/kube/kube_api_server.py`) on a port of its
/// choosing, with a CA generated at start; killed when dropped.
pub struct KubeServer {
    child: Child,
    pub server: String,
    /// Base64 of the PEM CA, as EKS gives it.
    pub ca_data: String,
}

/// The token the test server lets do everything.
pub const ADMIN_TOKEN: &str = "admin-token-for-tests";
/// A token the test server knows but forbids in the Argo CD namespace (403).
pub const LIMITED_TOKEN: &str = "limited-token-for-tests";

impl KubeServer {
    /// `extra` e.g. `["--argocd-sim", "healthy"]`.
    pub fn start(extra: &[&str]) -> KubeServer {
        let (child, ready) = start_announcing(
            Command::new(python())
                .arg(repo_root().join("tests/kube/kube_api_server.py"))
                .args([
                    "--admin-token",
                    ADMIN_TOKEN,
                    "--limited-token",
                    LIMITED_TOKEN,
                ])
                .args(extra)
                .stderr(Stdio::inherit()),
            "start kube_api_server.py: run scripts/setup.sh first",
        );
        KubeServer {
            server: ready["server"].as_str().unwrap_or_default().to_owned(),
            ca_data: ready["caData"].as_str().unwrap_or_default().to_owned(),
            child,
        }
    }
}

impl KubeServer {
    /// A kube client with the admin token: the management cluster as its operator sees it.
    pub async fn admin_client(&self) -> kube::Client {
        canary_kube::access::client(&self.server, &self.ca_data, ADMIN_TOKEN.to_owned())
            .await
            .expect("kube client for the test server")
    }

    /// The Secrets in Argo CD's namespace, as an administrator sees them.
    pub async fn argocd_secrets(&self) -> kube::Api<k8s_openapi::api::core::v1::Secret> {
        kube::Api::namespaced(self.admin_client().await, "argocd")
    }
}

/// Starts `command` (a test server that binds a port of its own and prints where, as one JSON
/// line, first on stdout) and reads that line; panics with `what` if it does not come.
pub fn start_announcing(command: &mut Command, what: &str) -> (Child, serde_json::Value) {
    let mut child = command.stdout(Stdio::piped()).spawn().expect(what);
    let mut line = String::new();
    if let Some(stdout) = child.stdout.take() {
        let _ = BufReader::new(stdout).read_line(&mut line);
    }
    match serde_json::from_str(&line) {
        Ok(ready) => (child, ready),
        Err(e) => {
            let _ = child.kill();
            panic!("{what}: it did not start ({e}): {line:?}")
        }
    }
}

impl Drop for KubeServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What `seed_world.py` created.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct World {
    pub listener: String,
    pub rule: String,
    pub fixed_listener: String,
    pub foreign_listener: String,
    pub blue: String,
    pub green: String,
    pub other: String,
    pub lb_dns_name: String,
    /// The NLB's TCP listener :443, forwarding to `tcp_blue` only.
    pub nlb_listener: String,
    pub tcp_blue: String,
    pub tcp_green: String,
    /// A UDP target group beside the NLB's TCP ones.
    pub udp_group: String,
    pub zone_id: String,
    pub state_machine: String,
}

/// Reads the emulated AWS state the tests assert on.
pub struct Observer {
    elbv2: elbv2::Client,
    route53: route53::Client,
}

impl Observer {
    pub fn new(config: &SdkConfig) -> Self {
        Observer {
            elbv2: elbv2::Client::new(config),
            route53: route53::Client::new(config),
        }
    }

    pub fn elbv2(&self) -> &elbv2::Client {
        &self.elbv2
    }

    pub fn route53(&self) -> &route53::Client {
        &self.route53
    }

    async fn listener(&self, arn: &str) -> elbv2::types::Listener {
        let out = self
            .elbv2
            .describe_listeners()
            .listener_arns(arn)
            .send()
            .await
            .expect("describe listener");
        out.listeners()[0].clone()
    }

    /// `(target group ARN, weight)` of the forward action of a listener's default action.
    pub async fn listener_weights(&self, listener: &str) -> Vec<(String, i32)> {
        forward_weights(self.listener(listener).await.default_actions())
    }

    pub async fn rule_weights(&self, rule: &str) -> Vec<(String, i32)> {
        let out = self
            .elbv2
            .describe_rules()
            .rule_arns(rule)
            .send()
            .await
            .expect("describe rule");
        forward_weights(out.rules()[0].actions())
    }

    /// `(set identifier, weight)` of the records of a name and type.
    pub async fn record_weights(
        &self,
        zone: &str,
        name: &str,
        rr_type: &str,
    ) -> Vec<(String, i64)> {
        self.records(zone)
            .await
            .into_iter()
            .filter(|r| r.name() == name && r.r#type().as_str() == rr_type)
            .map(|r| {
                (
                    r.set_identifier().unwrap_or_default().to_owned(),
                    r.weight().unwrap_or(-1),
                )
            })
            .collect()
    }

    pub async fn records(&self, zone: &str) -> Vec<route53::types::ResourceRecordSet> {
        self.route53
            .list_resource_record_sets()
            .hosted_zone_id(zone)
            .send()
            .await
            .expect("list records")
            .resource_record_sets()
            .to_vec()
    }

    /// Everything a shift could change: every listener's actions, the rules' actions and the
    /// zone's records, as text to compare before and after.
    pub async fn snapshot(&self, world: &World) -> String {
        let mut text = String::new();
        for listener in [
            &world.listener,
            &world.fixed_listener,
            &world.foreign_listener,
            &world.nlb_listener,
        ] {
            text.push_str(&format!("{:?}\n", self.listener(listener).await));
        }
        let rules = self
            .elbv2
            .describe_rules()
            .listener_arn(&world.listener)
            .send()
            .await
            .expect("describe rules");
        text.push_str(&format!("{:?}\n", rules.rules()));
        text.push_str(&format!("{:?}\n", self.records(&world.zone_id).await));
        text
    }
}

fn forward_weights(actions: &[elbv2::types::Action]) -> Vec<(String, i32)> {
    actions
        .iter()
        .filter_map(|a| a.forward_config())
        .flat_map(|f| f.target_groups())
        .map(|tg| {
            (
                tg.target_group_arn().unwrap_or_default().to_owned(),
                tg.weight().unwrap_or(-1),
            )
        })
        .collect()
}

/// Creates an EKS cluster `name` in `region` (ACTIVE at once in moto) in the account
/// `config`'s credentials act in; its ARN.
pub async fn create_cluster(config: &SdkConfig, name: &str, region: &str) -> String {
    let config = aws_sdk_eks::config::Builder::from(config)
        .region(aws_sdk_eks::config::Region::new(region.to_owned()))
        .build();
    aws_sdk_eks::Client::from_conf(config)
        .create_cluster()
        .name(name)
        .role_arn("arn:aws:iam::123456789012:role/eks")
        .resources_vpc_config(
            aws_sdk_eks::types::VpcConfigRequest::builder()
                .subnet_ids("subnet-1")
                .build(),
        )
        .send()
        .await
        .expect("create cluster")
        .cluster()
        .and_then(|c| c.arn())
        .expect("an ARN")
        .to_owned()
}

//! The CLI binary against a moto server (the seeded world of `tests/moto/seed_world.py`),
//! over the wire with the real SDK clients, as a person runs it: exit codes, what it prints,
//! and that read-only commands write nothing. moto does not execute the seeded state machine,
//! so an execution started on it stays RUNNING: a rollout in progress that never waits for an
//! approval. Rollouts that move traffic are tried on the sandbox (tests/e2e/test_cli.py).

use std::path::PathBuf;
use std::process::{Command, Output};

use aws_sdk_cloudformation as cloudformation;
use aws_sdk_sfn as sfn;
use cluster_canary_tests::{create_cluster, python, Moto, World};
use serde_json::{json, Value};

struct Cli {
    moto: Moto,
    world: World,
    dir: PathBuf,
}

impl Cli {
    fn start() -> Cli {
        let moto = Moto::start();
        let world = moto.seed();
        let dir = std::env::temp_dir().join(format!(
            "cluster-canary-cli-{}-{}",
            std::process::id(),
            moto.endpoint.rsplit(':').next().unwrap_or("0")
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        Cli { moto, world, dir }
    }

    /// `cluster-canary ARGS` with the emulator's endpoint and dummy credentials, run in a
    /// directory of its own (no samconfig.toml), told the state machine's ARN.
    fn run(&self, args: &[&str]) -> Output {
        self.command(args)
            .env("CLUSTER_CANARY_STATE_MACHINE", &self.world.state_machine)
            .output()
            .expect("run cluster-canary")
    }

    /// The same, left to find the state machine itself.
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_cluster-canary"));
        command
            .args(args)
            .current_dir(&self.dir)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("AWS_ENDPOINT_URL", &self.moto.endpoint)
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_EC2_METADATA_DISABLED", "true");
        command
    }

    fn file(&self, name: &str, content: &str) -> String {
        let path = self.dir.join(name);
        std::fs::write(&path, content).expect("write plan");
        path.to_string_lossy().into_owned()
    }

    fn plan(&self) -> Value {
        json!({
            "cluster": {"name": "green", "region": "us-east-1"},
            "trafficTargets": [
                {"alb": {"listenerArn": self.world.listener, "stableTargetGroupArn": self.world.blue,
                         "canaryTargetGroupArn": self.world.green}},
                {"route53": {"hostedZoneId": self.world.zone_id, "recordName": "www.example.com",
                             "recordType": "CNAME", "stableSetIdentifier": "blue", "canarySetIdentifier": "green"}}
            ],
            "steps": [{"weight": 10}, {"weight": 50}, {"weight": 100}],
            "bake": {"seconds": 120, "checkIntervalSeconds": 60}
        })
    }

    /// Everything moto holds, as its own API dumps it.
    fn moto_state(&self) -> Vec<u8> {
        let out = Command::new(python())
            .args([
                "-c",
                "import sys, urllib.request; sys.stdout.buffer.write(urllib.request.urlopen(sys.argv[1]).read())",
                &format!("{}/moto-api/data.json", self.moto.endpoint),
            ])
            .output()
            .expect("read moto's state");
        assert!(out.status.success());
        out.stdout
    }

    /// The plan's new cluster, ACTIVE at once in moto.
    async fn create_green(&self) {
        create_cluster(&self.moto.sdk_config().await, "green", "us-east-1").await;
    }

    async fn sfn(&self) -> sfn::Client {
        sfn::Client::new(&self.moto.sdk_config().await)
    }

    /// An execution of the seeded state machine: RUNNING for as long as the test needs.
    async fn running(&self, name: &str, plan: &Value) -> String {
        self.sfn()
            .await
            .start_execution()
            .state_machine_arn(&self.world.state_machine)
            .name(name)
            .input(plan.to_string())
            .send()
            .await
            .expect("start an execution")
            .execution_arn()
            .to_owned()
    }
}

impl Drop for Cli {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn validate_names_every_problem_by_field_path_and_exits_1() {
    let cli = Cli::start();
    let good = cli.file("good.json", &cli.plan().to_string());
    let out = cli.run(&["plan", "validate", &good]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("valid: 3 steps (10%, 50%, 100%)"),
        "{}",
        stdout(&out)
    );

    let mut bad = cli.plan();
    bad["steps"] = json!([{"weight": 50}, {"weight": 10}]);
    bad["bake"]["checkIntervalSeconds"] = json!(0);
    bad["surprise"] = json!(true);
    let bad = cli.file("bad.json", &bad.to_string());
    let not_json = cli.file("not-json.json", "{\"cluster\": ");
    let out = cli.run(&["plan", "validate", &good, &bad, &not_json]);
    assert_eq!(out.status.code(), Some(1));
    let said = stdout(&out);
    assert!(said.contains("good.json: valid"), "{said}");
    assert!(said.contains("bad.json: invalid plan"), "{said}");
    assert!(said.contains("surprise"), "unknown field named: {said}");
    assert!(said.contains("not-json.json: not JSON"), "{said}");

    let out = cli.run(&["plan", "validate", "--output", "json", &bad]);
    assert_eq!(out.status.code(), Some(1));
    let answer: Value = serde_json::from_str(stdout(&out).trim()).expect("one JSON object");
    assert_eq!(answer["valid"], false);
    assert!(answer["errors"]
        .as_array()
        .is_some_and(|errors| errors.iter().all(|e| e["path"].is_string())));

    let out = cli.run(&["plan", "validate", "--schema"]);
    assert_eq!(out.status.code(), Some(0));
    let schema: Value = serde_json::from_str(&stdout(&out)).expect("the schema is JSON");
    assert_eq!(schema, canary_core::schema::rollout_plan_schema());

    let out = cli.run(&["plan", "validate"]);
    assert_eq!(out.status.code(), Some(2), "no file is a usage error");
}

#[tokio::test]
async fn check_reports_what_prepare_would_find_and_writes_nothing() {
    let cli = Cli::start();
    cli.create_green().await;
    let plan = cli.file("plan.json", &cli.plan().to_string());
    let before = cli.moto_state();
    let out = cli.run(&["plan", "check", &plan]);
    let said = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{said}{}", stderr(&out));
    assert!(
        said.contains("the canary target group will be attached at weight 0"),
        "{said}"
    );
    assert!(
        said.contains("www.example.com. (route53): now stable 100 / canary 0; TTL 60 s"),
        "{said}"
    );
    assert!(
        said.contains("✓ no other rollout shifts these targets"),
        "{said}"
    );
    assert!(
        said.contains("✓ cluster green (us-east-1) is ACTIVE"),
        "{said}"
    );
    assert!(
        said.contains("1/3   10%     90 / 10"),
        "the step table: {said}"
    );
    assert!(said.contains("at least 6 min"), "{said}");
    assert_eq!(cli.moto_state(), before, "plan check wrote to AWS");
    assert!(before.len() > 1000 && String::from_utf8_lossy(&before).contains("example.com"));
}

/// An NLB listener is read as Prepare reads it: its note on connections, the canary to attach;
/// a UDP canary beside the TCP stable target group is refused, naming both; nothing written.
#[tokio::test]
async fn check_reads_an_nlb_listener_and_refuses_a_canary_of_another_protocol() {
    let cli = Cli::start();
    cli.create_green().await;
    let nlb = |canary: &str| {
        json!({
            "cluster": {"name": "green", "region": "us-east-1"},
            "trafficTargets": [{"nlb": {"listenerArn": cli.world.nlb_listener,
                "stableTargetGroupArn": cli.world.tcp_blue, "canaryTargetGroupArn": canary}}],
            "steps": [{"weight": 10}, {"weight": 100}],
            "bake": {"seconds": 600, "checkIntervalSeconds": 60}
        })
    };
    let good = cli.file("nlb.json", &nlb(&cli.world.tcp_green).to_string());
    let udp = cli.file("udp.json", &nlb(&cli.world.udp_group).to_string());
    let before = cli.moto_state();
    let out = cli.run(&["plan", "check", &good]);
    let said = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{said}{}", stderr(&out));
    assert!(said.contains("(nlb): now stable 100 / canary 0"), "{said}");
    assert!(said.contains("moves new connections only"), "{said}");
    let out = cli.run(&["plan", "check", &udp]);
    let said = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("✗ targets: TargetMisconfigured") && said.contains("is UDP"),
        "{said}"
    );
    assert_eq!(cli.moto_state(), before, "plan check wrote to AWS");
}

#[tokio::test]
async fn check_refuses_missing_targets_and_alarms_and_a_concurrent_rollout() {
    let cli = Cli::start();
    let mut plan = cli.plan();
    plan["trafficTargets"][1]["route53"]["canarySetIdentifier"] = json!("purple");
    plan["analysis"] = json!({"alarms": {"names": ["no-such-alarm"]}});
    let file = cli.file("plan.json", &plan.to_string());
    cli.running("other-rollout", &cli.plan()).await;
    let before = cli.moto_state();
    let out = cli.run(&["plan", "check", &file]);
    let said = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("✗ analysis: AlarmNotFound: analysis.alarms.names[0]"),
        "{said}"
    );
    assert!(
        said.contains("✗ targets: TargetNotFound: trafficTargets[1]"),
        "{said}"
    );
    assert!(said.contains("set identifier `purple`"), "{said}");
    assert!(
        said.contains("✗ concurrent rollouts: ConcurrentRollout"),
        "{said}"
    );
    assert!(said.contains("other-rollout"), "{said}");
    assert!(
        said.contains("✗ cluster: ClusterNotFound: there is no EKS cluster green in us-east-1"),
        "{said}"
    );
    assert_eq!(cli.moto_state(), before, "plan check wrote to AWS");
}

#[tokio::test]
async fn start_validates_first_and_starts_with_the_plan_as_input() {
    let cli = Cli::start();
    let mut bad = cli.plan();
    bad["steps"] = json!([]);
    let bad = cli.file("bad.json", &bad.to_string());
    let out = cli.run(&["start", &bad]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("invalid plan"), "{}", stderr(&out));
    let sfn = cli.sfn().await;
    let listed = sfn
        .list_executions()
        .state_machine_arn(&cli.world.state_machine)
        .send()
        .await
        .expect("list");
    assert!(listed.executions().is_empty(), "nothing started");

    let good = cli.file("good.json", &cli.plan().to_string());
    let out = cli.run(&["start", &good, "--name", "bad name!"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("an execution name is 1 to 80"),
        "{}",
        stderr(&out)
    );

    let out = cli.run(&["start", &good, "--name", "green-by-hand"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let arn = stdout(&out)
        .trim()
        .trim_start_matches("started: ")
        .to_owned();
    assert!(arn.ends_with(":execution:rollout:green-by-hand"), "{arn}");
    let started = sfn
        .describe_execution()
        .execution_arn(&arn)
        .send()
        .await
        .expect("it exists");
    let input: Value = serde_json::from_str(started.input().unwrap_or_default()).expect("JSON");
    assert_eq!(input, cli.plan());

    // The same name and plan again while it runs: StartExecution would answer with the running
    // one's ARN, starting nothing; the CLI says so instead of `started:`.
    let again = cli.run(&["start", &good, "--name", "green-by-hand"]);
    assert_eq!(again.status.code(), Some(1));
    assert!(!stdout(&again).contains("started:"), "{}", stdout(&again));
    assert!(
        stderr(&again).contains("a rollout named `green-by-hand` is already running"),
        "{}",
        stderr(&again)
    );
}

#[tokio::test]
async fn approve_and_reject_refuse_clearly_when_nothing_waits() {
    let cli = Cli::start();
    let out = cli.run(&["approve"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no rollout is running"),
        "{}",
        stderr(&out)
    );

    let arn = cli.running("green-1", &cli.plan()).await;
    let out = cli.run(&["approve"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out).trim(),
        format!("error: {arn} is running but is not waiting for an approval")
    );
    // Too long for the execution's cause, or blank: refused before anything is sent.
    for reason in ["x".repeat(1001), "   ".to_owned()] {
        let out = cli.run(&["reject", &arn, "--reason", &reason]);
        assert_eq!(out.status.code(), Some(1));
        assert!(
            stderr(&out).contains("1 to 1000 characters"),
            "{}",
            stderr(&out)
        );
    }

    cli.running("green-2", &cli.plan()).await;
    let out = cli.run(&["approve"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("2 rollouts are running; name one"),
        "{}",
        stderr(&out)
    );
    let out = cli.run(&["approve", "not-an-arn:execution:"]);
    assert_eq!(out.status.code(), Some(1));
}

#[tokio::test]
async fn abort_before_any_traffic_moved_stops_and_restores_nothing() {
    let cli = Cli::start();
    let arn = cli.running("green-abort", &cli.plan()).await;
    let out = cli.run(&["abort", "green-abort", "--reason", "wrong cluster"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("never set a step (no traffic moved): nothing to restore"),
        "{}",
        stdout(&out)
    );
    let stopped = cli
        .sfn()
        .await
        .describe_execution()
        .execution_arn(&arn)
        .send()
        .await
        .expect("describe");
    assert_eq!(stopped.status().as_str(), "ABORTED");
}

#[tokio::test]
async fn list_shows_rollouts_and_finds_the_state_machine_from_the_stack() {
    let cli = Cli::start();
    let out = cli.run(&["list"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("no rollouts yet"),
        "{}",
        stdout(&out)
    );
    cli.running("green-listed", &cli.plan()).await;

    // The SAM stack's output, as `sam deploy` leaves it.
    let template = json!({
        "Resources": {"Queue": {"Type": "AWS::SQS::Queue"}},
        "Outputs": {"RolloutStateMachineArn": {"Value": cli.world.state_machine}}
    });
    cloudformation::Client::new(&cli.moto.sdk_config().await)
        .create_stack()
        .stack_name("canary-prod")
        .template_body(template.to_string())
        .send()
        .await
        .expect("create the stack");
    let out = cli
        .command(&["list", "--stack", "canary-prod"])
        .output()
        .expect("run");
    let said = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{said}{}", stderr(&out));
    assert!(
        said.lines().next().is_some_and(|l| l.starts_with("NAME")),
        "{said}"
    );
    assert!(
        said.contains("green-listed  us-east-1/green  RUNNING"),
        "{said}"
    );

    let out = cli
        .command(&["list", "--stack", "no-such-stack"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(
            "cannot read RolloutStateMachineArn from stack `no-such-stack` in us-east-1: it does \
             not exist there; deploy it with `sam deploy`, or name it: --stack NAME, \
             --state-machine ARN or CLUSTER_CANARY_STATE_MACHINE"
        ),
        "{}",
        stderr(&out)
    );
    // A stack without the fleet's outputs (deployed before fleets): the way to name it.
    let out = cli
        .command(&["fleet", "list", "--stack", "canary-prod"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(
            "stack `canary-prod` has no output FleetStateMachineArn: is it a cluster-canary stack \
             (one deployed before FleetStateMachineArn existed needs `sam deploy` again)? Or name \
             it with --fleet-state-machine ARN or CLUSTER_CANARY_FLEET_STATE_MACHINE"
        ),
        "{}",
        stderr(&out)
    );

    // samconfig.toml in the current directory names the stack, as `sam deploy` reads it.
    cli.file(
        "samconfig.toml",
        "version = 0.1\n[default.global.parameters]\nstack_name = \"canary-prod\"\n",
    );
    let out = cli.command(&["list"]).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("green-listed"), "{}", stdout(&out));
    let out = cli
        .command(&["list", "--state-machine", "not-an-arn"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("`not-an-arn` is not a state machine ARN"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn without_credentials_every_message_is_for_people() {
    let cli = Cli::start();
    let plan = cli.file("plan.json", &cli.plan().to_string());
    // No keys, no profile files (HOME is the empty test directory), no instance metadata.
    let without_credentials = |args: &[&str]| {
        cli.command(args)
            .env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY")
            .env("HOME", &cli.dir)
            .output()
            .expect("run cluster-canary")
    };
    for args in [
        vec!["plan", "check", plan.as_str()],
        vec!["list"],
        vec!["list", "--state-machine", &cli.world.state_machine],
    ] {
        let out = without_credentials(&args);
        let said = format!("{}{}", stdout(&out), stderr(&out));
        assert_ne!(out.status.code(), Some(0), "{args:?}: {said}");
        assert!(said.contains("no AWS credentials"), "{args:?}: {said}");
        assert!(said.contains("AWS_PROFILE"), "{args:?}: {said}");
        for debug in ["{ ", "DispatchFailure(", "ConnectorError", "Some("] {
            assert!(
                !said.contains(debug),
                "{args:?} shows Rust debug syntax: {said}"
            );
        }
        assert!(!said.contains("AwsTransient"), "{args:?}: {said}");
        assert!(!said.contains("sam deploy"), "{args:?}: {said}");
    }
}

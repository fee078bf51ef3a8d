"""Starts and stops the local sandbox, all on free loopback ports, with dummy credentials:

  front door (front_door.py) --> moto in server mode, with its Step Functions engine on,
                             \\-> `cargo lambda watch`, running the real functions through
                                 the Lambda runtime API
  Kubernetes API test server (tests/kube/kube_api_server.py) in Argo CD simulation mode

moto's engine runs statemachine/rollout.asl.json and reaches Lambda through the front door
($MOTO_PORT); the functions reach AWS through it too ($AWS_ENDPOINT_URL), and Argo CD through
the Secrets Manager connection secret. `Sandbox` is a context manager: leaving it stops
every process it started.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import boto3
from botocore.config import Config

from . import world as world_mod
from .front_door import FrontDoor

REPO = Path(__file__).resolve().parent.parent
FUNCTIONS = ("shift-weights", "evaluate-alarms", "register-cluster", "cluster-created")
# The operator CLI (`cargo build --workspace --bins` builds it with the functions).
CLI = REPO / "target" / "debug" / "cluster-canary"
STATE_MACHINE = "cluster-canary-rollout"
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "test",
    "AWS_SECRET_ACCESS_KEY": "test",
    "AWS_DEFAULT_REGION": world_mod.REGION,
    "AWS_REGION": world_mod.REGION,
    "AWS_EC2_METADATA_DISABLED": "true",
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, seconds, process=None, what="process"):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}")
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not open port {port} in {seconds} s")


def function_arn(name):
    return f"arn:aws:lambda:{world_mod.REGION}:{world_mod.ACCOUNT}:function:{name}"


# The token the functions reach the management cluster with when the sandbox enforces RBAC.
FUNCTIONS_TOKEN = "sandbox-functions"


class Sandbox:
    def __init__(self, argocd_sim="healthy", healthy_after=3.0, log=print, rbac=None):
        """`rbac`: Kubernetes RBAC manifests (paths); the functions then reach the management
        cluster as the group `cluster-canary` with only what those grant, as in
        infra/kubernetes/argocd-rbac.yaml, instead of as its administrator."""
        self.argocd_sim = argocd_sim
        self.healthy_after = healthy_after
        self.rbac = rbac
        self.log = log
        self.processes = []
        self.front = None
        self.run_dir = None

    # --- lifecycle ----------------------------------------------------------------------
    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def spawn(self, args, log_name, env=None, stdout=None):
        log = open(os.path.join(self.run_dir, log_name), "w")
        process = subprocess.Popen(
            args,
            cwd=REPO,
            env={**os.environ, **CREDENTIALS, **(env or {})},
            stdout=stdout or log,
            stderr=log,
            start_new_session=True,  # so stop() can end the whole group (watch runs children)
        )
        self.processes.append(process)
        return process

    def start(self):
        os.environ.pop("AWS_ENDPOINT_URL", None)
        self.run_dir = tempfile.mkdtemp(prefix="cluster-canary-sandbox-")
        python = sys.executable

        kube = self.spawn(
            [python, "tests/kube/kube_api_server.py", "--admin-token", "sandbox-admin",
             "--argocd-sim", self.argocd_sim, "--apps-per-cluster", "2", "--healthy-after", str(self.healthy_after),
             *(["--rbac-token", FUNCTIONS_TOKEN, "--rbac-groups", "cluster-canary"] if self.rbac else []),
             *[arg for manifest in self.rbac or [] for arg in ("--rbac", str(manifest))]],
            "kube.log",
            stdout=subprocess.PIPE,
        )
        line = kube.stdout.readline().decode()
        if not line:
            raise RuntimeError(f"the Kubernetes API test server did not start; see {self.run_dir}/kube.log")
        self.kube = json.loads(line)

        moto_port, front_port, lambda_port = free_port(), free_port(), free_port()
        self.front = FrontDoor(front_port, moto_port, lambda_port).start()
        self.endpoint = f"http://127.0.0.1:{self.front.port}"
        # MOTO_PORT: where moto's Step Functions engine sends Lambda (and SDK) calls.
        moto = self.spawn([python, "tests/moto/moto_server.py", "-H", "127.0.0.1", "-p", str(moto_port)], "moto.log",
                          env={"MOTO_PORT": str(self.front.port)})
        wait_port(moto_port, 60, moto, "moto")
        request = urllib.request.Request(
            f"{self.endpoint}/moto-api/config",
            data=json.dumps({"stepfunctions": {"execute_state_machine": True}}).encode(),
            headers={"Content-Type": "application/json"},
        )
        urllib.request.urlopen(request).read()

        self.world = world_mod.seed(
            self.client, {"server": self.kube["server"], "caData": self.kube["caData"],
                          "token": FUNCTIONS_TOKEN if self.rbac else "sandbox-admin"}
        )
        definition = (REPO / "statemachine/rollout.asl.json").read_text()
        for key, name in (("ShiftWeightsFunctionArn", "shift-weights"), ("EvaluateAlarmsFunctionArn", "evaluate-alarms"),
                          ("RegisterClusterFunctionArn", "register-cluster")):
            definition = definition.replace("${%s}" % key, function_arn(name))
        self.state_machine = self.client("stepfunctions").create_state_machine(
            name=STATE_MACHINE, definition=definition, roleArn=f"arn:aws:iam::{world_mod.ACCOUNT}:role/rollout"
        )["stateMachineArn"]

        env_file = os.path.join(self.run_dir, "functions.env")
        with open(env_file, "w") as f:
            for k, v in {
                **CREDENTIALS,
                "AWS_ENDPOINT_URL": self.endpoint,
                "RUST_LOG": "info",
                "MANAGEMENT_ACCESS": "secret",
                "MANAGEMENT_SECRET_ID": world_mod.CONNECTION_SECRET,
                "STATE_MACHINE_ARN": self.state_machine,
                "ARGOCD_NAMESPACE": "argocd",
                "PROFILES": json.dumps(self.world.profiles),
            }.items():
                # Single quotes: dotenv takes the value verbatim (PROFILES is JSON).
                f.write(f"{k}='{v}'\n")
        cargo_lambda = shutil.which("cargo-lambda") or str(Path(python).parent / "cargo-lambda")
        watch = self.spawn([cargo_lambda, "lambda", "watch", "--ignore-changes", "-A", "127.0.0.1", "-P", str(lambda_port),
                            "--env-file", env_file], "functions.log")
        wait_port(lambda_port, 600, watch, "cargo lambda watch")
        self.log(f"sandbox up: AWS at {self.endpoint}, Argo CD at {self.kube['server']} (logs in {self.run_dir})")
        self.log("cluster-canary from another terminal: export " + " ".join(
            f"{k}={v}" for k, v in {**self.cli_env(), "PATH": "$PWD/target/debug:$PATH"}.items()))

    def stop(self):
        for process in reversed(self.processes):
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for process in self.processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self.processes.clear()
        if self.front:
            self.front.stop()
            self.front = None

    # --- clients ------------------------------------------------------------------------
    def client(self, service, region=world_mod.REGION):
        return boto3.client(
            service,
            endpoint_url=self.endpoint,
            region_name=region,
            aws_access_key_id="test",
            aws_secret_access_key="test",
            config=Config(retries={"max_attempts": 2}, read_timeout=900),
        )

    def cli_env(self):
        """What the operator CLI needs to talk to the sandbox instead of AWS."""
        return {
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_REGION": world_mod.REGION,
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_ENDPOINT_URL": self.endpoint,
            "CLUSTER_CANARY_STATE_MACHINE": self.state_machine,
        }

    def cli(self, *args, timeout=120):
        """Runs `cluster-canary ARGS...` against the sandbox; the CompletedProcess."""
        return subprocess.run([str(CLI), *args], cwd=REPO, env={**os.environ, **self.cli_env()},
                              capture_output=True, text=True, timeout=timeout)

    def cli_process(self, *args):
        """Starts `cluster-canary ARGS...` against the sandbox; lines on its stdout."""
        return subprocess.Popen([str(CLI), *args], cwd=REPO, env={**os.environ, **self.cli_env()},
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)

    def invoke(self, function, payload):
        """Invokes a function as Lambda would be invoked (through the front door)."""
        answer = self.client("lambda").invoke(FunctionName=function_arn(function), Payload=json.dumps(payload).encode())
        body = json.loads(answer["Payload"].read() or b"null")
        return answer.get("FunctionError"), body


def sam_template():
    """template.yaml as plain data (CloudFormation's short-form tags read as their argument)."""
    import yaml

    class Template(yaml.SafeLoader):
        pass

    def construct(loader, suffix, node):
        if isinstance(node, yaml.ScalarNode):
            return loader.construct_scalar(node)
        if isinstance(node, yaml.SequenceNode):
            return loader.construct_sequence(node)
        return loader.construct_mapping(node)

    Template.add_multi_constructor("!", construct)
    return yaml.load((REPO / "template.yaml").read_text(), Loader=Template)


def safety_net_rule():
    """The SAM template's SafetyNet rule: the statuses it matches and its input template."""
    rule = sam_template()["Resources"]["ShiftWeightsFunction"]["Properties"]["Events"]["SafetyNet"]["Properties"]
    return rule["Pattern"]["detail"]["status"], rule["InputTransformer"]["InputTemplate"]

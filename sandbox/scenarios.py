"""Rollout scenarios on the sandbox, and a live view of a rollout as a person wants to watch
it: each state that matters, the weights of every target as read back from (emulated) AWS,
each check's verdict and reasons, and the outcome."""
import base64
import copy
import json
import ssl
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field

from .harness import REPO, Sandbox

SCENARIOS = ("happy", "rollback", "apps-unhealthy", "stopped")


@dataclass
class Report:
    execution_arn: str
    status: str
    error: str = None
    cause: str = None
    states: list = field(default_factory=list)  # names of the states that ran, in order
    weights: dict = field(default_factory=dict)  # target -> (blue, green), read from moto at the end
    max_canary: int = 0  # the most traffic the canary ever had, in percent of each target's weights
    secret: dict = None  # the Argo CD Secret's labels and decoded data, if present


def create_cluster_event(sandbox, name="green"):
    """The EventBridge event for CreateCluster of `name`, tagged for the `web` profile, as
    EventBridge delivers it (CloudTrail's record of the call)."""
    event = json.loads((REPO / "tests/events/eks-create-cluster.json").read_text())
    tags = {
        "cluster-canary/profile": "web",
        "cluster-canary/canary-target-group": sandbox.world.green_tg,
        "cluster-canary/canary-set-identifier": "green",
        "team": "platform",
    }
    event["id"] = str(uuid.uuid4())
    detail = event["detail"]
    detail["eventID"] = str(uuid.uuid4())
    detail["requestParameters"].update(name=name, tags=tags)
    detail["responseElements"]["cluster"].update(
        name=name, arn=f"arn:aws:eks:us-east-1:123456789012:cluster/{name}", tags=copy.deepcopy(tags)
    )
    return event


def create_green(sandbox, name="green"):
    """What the platform team does: create the cluster. moto makes it ACTIVE at once."""
    eks = sandbox.client("eks")
    subnets = [s["SubnetId"] for s in sandbox.client("ec2").describe_subnets()["Subnets"]][:2]
    eks.create_cluster(
        name=name,
        version="1.34",
        roleArn="arn:aws:iam::123456789012:role/eks-cluster",
        resourcesVpcConfig={"subnetIds": subnets},
        tags=create_cluster_event(sandbox, name)["detail"]["requestParameters"]["tags"],
    )


def read_weights(sandbox):
    """target -> (blue weight, green weight), as moto holds them now."""
    world = sandbox.world
    listener = sandbox.client("elbv2").describe_listeners(ListenerArns=[world.listener])["Listeners"][0]
    groups = {
        tg["TargetGroupArn"]: tg.get("Weight", 1)
        for action in listener["DefaultActions"]
        for tg in action.get("ForwardConfig", {}).get("TargetGroups", [])
    }
    records = sandbox.client("route53").list_resource_record_sets(
        HostedZoneId=world.zone_id, StartRecordName=world.record, StartRecordType="A"
    )["ResourceRecordSets"]
    by_id = {r.get("SetIdentifier"): r.get("Weight") for r in records if r["Name"] == world.record}
    return {
        "listener :80": (groups.get(world.blue_tg, 0), groups.get(world.green_tg, 0)),
        world.record: (by_id.get("blue"), by_id.get("green")),
    }


def format_weights(weights):
    return ", ".join(f"{target} blue {b} / green {g}" for target, (b, g) in weights.items())


def read_secret(sandbox, name="cluster-canary-green"):
    """The Argo CD Secret's labels and decoded data, as the management cluster holds it."""
    context = ssl.create_default_context(cadata=base64.b64decode(sandbox.kube["caData"]).decode())
    request = urllib.request.Request(
        f"{sandbox.kube['server']}/api/v1/namespaces/argocd/secrets/{name}",
        headers={"Authorization": "Bearer sandbox-admin"},
    )
    try:
        secret = json.load(urllib.request.urlopen(request, context=context))
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None
        raise
    data = {k: base64.b64decode(v).decode() for k, v in secret.get("data", {}).items()}
    return {"labels": secret["metadata"].get("labels", {}), "data": data}


def target_label(key):
    """A target key for people: `listener <id>` or the record name."""
    if key.startswith("arn:"):
        return f"listener {key.rsplit('/', 1)[-1]}"
    return key.split(":")[2] if key.startswith("route53:") else key


def describe(name, output):
    """One line for people about a state that just ended, or None."""
    state = json.loads(output or "{}")
    if "failure" in state and name not in ("DescribeCheckFailure", "DescribeTaskFailure", "Restore"):
        failure = state["failure"]
        return f"{name} failed: {failure.get('Error')}: {failure.get('Cause')}"
    if name == "PrepareTraffic":
        steps = ", ".join(f"{s['weight']}%" for s in state["prepared"]["steps"])
        baseline = ", ".join(
            f"{target_label(w['target'])} stable {w['stable']} / canary {w['canary']}" for w in state["prepared"]["baseline"]
        )
        return f"prepared: steps {steps}; baseline {baseline}"
    if name == "DescribeCluster":
        return f"cluster {state['plan']['cluster']['name']} is {state['cluster']['status']}"
    if name == "RegisterCluster":
        r = state["registration"]
        return f"registered in Argo CD: Secret argocd/{r['secretName']} ({r['outcome']})"
    if name == "AppsStatus":
        apps = state["apps"]
        return f"Argo CD apps {'ready' if apps['ready'] else 'not ready'}: {apps['reason']}"
    if name == "Evaluate":
        v, bake = state["verdict"], state["bake"]
        return f"  check {bake['check']}/{state['cursor']['step']['checks']}: {v['verdict']} -- {v['summary']}"
    if name == "Restore":
        return "restored the baseline: " + ", ".join(
            f"stable {w['stable']} / canary {w['canary']}" for w in state["restored"]["weights"]
        )
    return None


TERMINAL_EVENTS = {"ExecutionSucceeded", "ExecutionFailed", "ExecutionAborted", "ExecutionTimedOut"}


def settle_deadline(execution):
    """moto may report the final status a moment before the history's last events: wait up to
    5 s after the execution stopped for them."""
    stopped = execution.get("stopDate")
    return stopped.timestamp() - time.time() + time.monotonic() + 5 if stopped else 0


def watch(sandbox, execution_arn, on_event=None, out=print, timeout=300):
    """Follows an execution to its end, printing it; `on_event(name, state)` is called as
    states end, to drive a scenario. Returns the Report."""
    sfn = sandbox.client("stepfunctions")
    seen, states, max_canary = 0, [], 0
    deadline = time.monotonic() + timeout
    while True:
        # Status first, history second, so the last history read comes after the final status.
        execution = sfn.describe_execution(executionArn=execution_arn)
        events, token = [], None
        while True:
            page = sfn.get_execution_history(executionArn=execution_arn, maxResults=1000, **({"nextToken": token} if token else {}))
            events += page["events"]
            token = page.get("nextToken")
            if not token:
                break
        for event in events[seen:]:
            if "stateEnteredEventDetails" in event:
                states.append(event["stateEnteredEventDetails"]["name"])
            details = event.get("stateExitedEventDetails")
            if details:
                name = details["name"]
                line = describe(name, details.get("output"))
                if name == "SetWeights":
                    weights = read_weights(sandbox)
                    step = json.loads(details["output"])["cursor"]
                    max_canary = max(max_canary, *(g * 100 // max(b + g, 1) for b, g in weights.values()))
                    line = f"step {step['number']}/{step['count']}: {step['step']['weight']}% to green -- read back: {format_weights(weights)}"
                if line:
                    out(line)
                if on_event:
                    on_event(name, json.loads(details.get("output") or "{}"))
        seen = len(events)
        ended = any(e["type"] in TERMINAL_EVENTS for e in events)
        if execution["status"] != "RUNNING" and (ended or time.monotonic() > settle_deadline(execution)):
            weights = read_weights(sandbox)
            report = Report(
                execution_arn=execution_arn,
                status=execution["status"],
                error=execution.get("error"),
                cause=execution.get("cause"),
                states=states,
                weights=weights,
                max_canary=max_canary,
                secret=read_secret(sandbox),
            )
            out(f"outcome: {report.status}" + (f" -- {report.error}: {report.cause}" if report.error else ""))
            out(f"final weights: {format_weights(weights)}")
            return report
        if time.monotonic() > deadline:
            raise TimeoutError(f"execution {execution_arn} still running after {timeout} s")
        time.sleep(0.5)


def play_safety_net(sandbox, execution_arn, status):
    """What the SAM template's SafetyNet rule does when an execution ends ABORTED or
    TIMED_OUT: invoke shift-weights with its InputTransformer's output. (moto cannot deliver
    EventBridge events to Lambda, so the sandbox delivers this one.)"""
    return sandbox.invoke("shift-weights", {"operation": "restoreAborted", "executionArn": execution_arn, "status": status})


def run(scenario, out=print):
    """Runs one scenario on a fresh sandbox. Returns the Report."""
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}; one of {', '.join(SCENARIOS)}")
    with Sandbox(argocd_sim="degraded" if scenario == "apps-unhealthy" else "healthy", log=out) as sandbox:
        return run_on(sandbox, scenario, out)


def run_on(sandbox, scenario, out=print):
    out(f"scenario {scenario}: blue serves everything; creating EKS cluster green")
    out(f"start: {format_weights(read_weights(sandbox))}")
    create_green(sandbox)
    error, result = sandbox.invoke("cluster-created", create_cluster_event(sandbox))
    if error:
        raise RuntimeError(f"cluster-created failed: {result}")
    out(f"cluster-created: {result['action']} {result['executionArn']}")
    execution_arn = result["executionArn"]
    sfn = sandbox.client("stepfunctions")

    def on_event(name, state):
        at_half = name == "SetWeights" and state["cursor"]["step"]["weight"] == 50
        if scenario == "rollback" and at_half:
            out(">>> alarm web-green-5xx goes to ALARM")
            sandbox.client("cloudwatch").set_alarm_state(
                AlarmName="web-green-5xx", StateValue="ALARM",
                StateReason="Threshold Crossed: 1 datapoint [42.0] was greater than the threshold (10.0).",
            )
        if scenario == "stopped" and at_half:
            out(">>> an operator stops the execution")
            sfn.stop_execution(executionArn=execution_arn, cause="stopped by hand in the sandbox")

    report = watch(sandbox, execution_arn, on_event, out)
    if scenario == "stopped" and report.status == "ABORTED":
        error, restored = play_safety_net(sandbox, execution_arn, "ABORTED")
        if error:
            raise RuntimeError(f"safety net failed: {restored}")
        out(f"safety net: {restored['reason']}")
        report.weights = read_weights(sandbox)
        out(f"final weights: {format_weights(report.weights)}")
    return report

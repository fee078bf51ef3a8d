"""Rollout scenarios on the sandbox, and a live view of a rollout as a person wants to watch
it: each state that matters, the weights of every target as read back from (emulated) AWS,
each check's verdict and reasons, and the outcome."""
import base64
import copy
import json
import os
import ssl
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field

from . import compare, datadog, error_budget, fleets, prometheus, test_traffic
from .alb_metrics import AlbMetrics
from .harness import CONTRACT, REPO, Sandbox
from .world import ACCOUNT, REGION, seed_accelerator, seed_lattice, seed_nlb

SCENARIOS = ("happy", "rollback", "apps-unhealthy", "stopped", "approval", "prometheus", "prometheus-healthy", "datadog",
             "compare", "compare-spike", "fleet", "fleet-halt", "fleet-outlier", "nlb", "nlb-rollback",
             "global-accelerator", "global-accelerator-rollback", "vpc-lattice", "vpc-lattice-rollback", "error-budget",
             "test-traffic", "test-traffic-fails")


@dataclass
class Report:
    execution_arn: str
    status: str
    error: str = None
    cause: str = None
    states: list = field(default_factory=list)  # names of the states that ran, in order
    weights: dict = field(default_factory=dict)  # target -> (blue, green), read from moto at the end
    max_canary: int = 0  # the most traffic the canary ever had, in percent of each target's weights
    secret: dict = None  # the Argo CD Secret's labels, annotations and decoded data, if present
    safety_net: dict = None  # what the safety net answered, if the end matched its rule
    largest_state: int = 0  # bytes of the largest state input/output or task result seen
    largest_state_at: str = None
    metrics: list = field(default_factory=list)  # (name, dimensions, value) the functions emitted for the cluster
    events: list = field(default_factory=list)  # (detail-type, detail) of its EventBridge events
    cli_exit: int = None  # the exit code of `cluster-canary watch` (the live view): 0 promoted, 1 otherwise
    abort_exit: int = None  # the exit code of `cluster-canary abort`, in the `stopped` scenario


def emitted_metrics(sandbox, cluster, dimension="Cluster"):
    """The CloudWatch metric points (Embedded Metric Format lines) the functions printed for
    `cluster` (`region/name`; or a fleet's name, with `dimension="Fleet"`), in order: (metric
    name, {dimension: value}, value)."""
    points = []
    with open(os.path.join(sandbox.run_dir, "functions.log"), errors="replace") as log:
        for line in log:
            if '"_aws"' not in line:
                continue
            try:
                document = json.loads(line)
            except ValueError:
                continue
            if document.get(dimension) != cluster:
                continue
            directive = document["_aws"]["CloudWatchMetrics"][0]
            dimensions = {d: document[d] for d in directive["Dimensions"][0]}
            for metric in directive["Metrics"]:
                points.append((metric["Name"], dimensions, document[metric["Name"]]))
    return points


def cluster_arn(name, region=REGION):
    return f"arn:aws:eks:{region}:{ACCOUNT}:cluster/{name}"


def create_cluster_event(sandbox, name="green", region=REGION):
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
        name=name, arn=cluster_arn(name, region), tags=copy.deepcopy(tags)
    )
    detail["awsRegion"] = event["region"] = region
    return event


def put_create_cluster_event(sandbox, name="green", timeout=60, event=None):
    """What CloudTrail does after CreateCluster: its event (`event`, or a new one for `name`) on
    the account's default bus, where the stack's rule delivers it to cluster-created
    (asynchronously, as EventBridge invokes Lambda). The ARN of the execution it started;
    `intake.NoRolloutStarted` saying why when it started none."""
    event = event or create_cluster_event(sandbox, name)
    stepfunctions = sandbox.client("stepfunctions")
    before = {e["executionArn"] for e in stepfunctions.list_executions(stateMachineArn=sandbox.state_machine)["executions"]}
    answer = sandbox.client("events").put_events(Entries=[{
        "Source": event["source"], "DetailType": event["detail-type"], "Detail": json.dumps(event["detail"]),
        "Resources": event.get("resources", []),
    }])
    if answer.get("FailedEntryCount"):
        raise RuntimeError(f"EventBridge refused the CreateCluster event: {answer['Entries']}")

    def started():
        executions = stepfunctions.list_executions(stateMachineArn=sandbox.state_machine)["executions"]
        return next((e["executionArn"] for e in executions if e["executionArn"] not in before), None)

    return sandbox.intake.started(event["detail"]["eventID"], name, started, timeout)


def create_green(sandbox, name="green", region=REGION):
    """What the platform team does: create the cluster. moto makes it ACTIVE at once."""
    eks = sandbox.client("eks", region)
    subnets = [s["SubnetId"] for s in sandbox.client("ec2", region).describe_subnets()["Subnets"]][:2]
    eks.create_cluster(
        name=name,
        version="1.34",
        roleArn="arn:aws:iam::123456789012:role/eks-cluster",
        resourcesVpcConfig={"subnetIds": subnets},
        tags=create_cluster_event(sandbox, name)["detail"]["requestParameters"]["tags"],
    )


def manual_plan(sandbox, cluster="green", region=REGION):
    """The plan a person would write by hand for `cluster`: the world's `web` profile with the
    canary sides filled in."""
    plan = json.loads(json.dumps(sandbox.world.profiles["web"]))
    plan["cluster"] = {"name": cluster, "region": region}
    plan["trafficTargets"][0]["alb"]["canaryTargetGroupArn"] = sandbox.world.green_tg
    plan["trafficTargets"][1]["route53"]["canarySetIdentifier"] = "green"
    return plan


def start_manual(sandbox, plan, name):
    """`aws stepfunctions start-execution` with `plan` as input; the execution ARN."""
    sfn = sandbox.client("stepfunctions")
    return sfn.start_execution(stateMachineArn=sandbox.state_machine, name=name, input=json.dumps(plan))["executionArn"]


def event_schema(detail_type):
    """The JSON Schema of one of cluster-canary's events (schema/events/)."""
    return json.loads((REPO / "schema/events" / f"{detail_type.lower().replace(' ', '-')}.schema.json").read_text())


def move_forward_by_hand(sandbox, listener, weights):
    """Someone else (a person, another tool) sets a listener's forward weights, `weights` as
    (target group, weight); throttled (a history may have told ELBv2 to), their tool asks again,
    as the AWS CLI does."""
    sandbox.client("elbv2", attempts=10).modify_listener(
        ListenerArn=listener,
        DefaultActions=[{"Type": "forward", "ForwardConfig": {"TargetGroups": [
            {"TargetGroupArn": group, "Weight": weight} for group, weight in weights]}}],
    )


def move_listener_by_hand(sandbox, blue, green):
    """Someone else sets the ALB listener's weights."""
    world = sandbox.world
    move_forward_by_hand(sandbox, world.listener, [(world.blue_tg, blue), (world.green_tg, green)])


def move_nlb_by_hand(sandbox, blue, green):
    """Someone else sets the NLB listener's weights (the `nlb` scenarios' world)."""
    world = sandbox.world
    move_forward_by_hand(sandbox, world.nlb_listener, [(world.tcp_blue_tg, blue), (world.tcp_green_tg, green)])


def move_accelerator_by_hand(sandbox, blue, green):
    """Someone else sets the endpoint group's weights (the `global-accelerator` scenarios'
    world): the whole list, as UpdateEndpointGroup takes it; a busy accelerator asked again."""
    world = sandbox.world
    sandbox.client("globalaccelerator", "us-west-2", attempts=10).update_endpoint_group(
        EndpointGroupArn=world.endpoint_group,
        EndpointConfigurations=[{"EndpointId": world.blue_endpoint, "Weight": blue},
                                {"EndpointId": world.green_endpoint, "Weight": green}],
    )


def move_lattice_by_hand(sandbox, blue, green):
    """Someone else sets the Lattice listener's weights (the `vpc-lattice` scenarios' world): the
    whole action, as UpdateListener takes it."""
    world = sandbox.world
    sandbox.client("vpc-lattice", attempts=10).update_listener(
        serviceIdentifier=world.lattice_service, listenerIdentifier=world.lattice_listener,
        defaultAction={"forward": {"targetGroups": [
            {"targetGroupIdentifier": world.lattice_blue_tg, "weight": blue},
            {"targetGroupIdentifier": world.lattice_green_tg, "weight": green}]}},
    )


def move_record_by_hand(sandbox, blue, green):
    """Someone else sets the weighted record's weights (both sets, in one change); throttled,
    their tool asks again."""
    world, route53 = sandbox.world, sandbox.client("route53", attempts=10)
    sets = [r for r in route53.list_resource_record_sets(HostedZoneId=world.zone_id, StartRecordName=world.record,
                                                          StartRecordType="A")["ResourceRecordSets"]
            if r["Name"] == world.record and r.get("SetIdentifier") in ("blue", "green")]
    changes = [{"Action": "UPSERT", "ResourceRecordSet": {**r, "Weight": blue if r["SetIdentifier"] == "blue" else green}}
               for r in sets]
    route53.change_resource_record_sets(HostedZoneId=world.zone_id, ChangeBatch={"Changes": changes})


def read_weights(sandbox):
    """target -> (blue weight, green weight), as moto holds them now."""
    world = sandbox.world

    def forward(listener, blue, green):
        read = sandbox.client("elbv2").describe_listeners(ListenerArns=[listener])["Listeners"][0]
        groups = {tg["TargetGroupArn"]: tg.get("Weight", 1)
                  for action in read["DefaultActions"] for tg in action.get("ForwardConfig", {}).get("TargetGroups", [])}
        return groups.get(blue, 0), groups.get(green, 0)

    weights = {"listener :80": forward(world.listener, world.blue_tg, world.green_tg)}
    if world.nlb_listener:  # the `nlb` scenarios' load balancer
        weights["nlb :443"] = forward(world.nlb_listener, world.tcp_blue_tg, world.tcp_green_tg)
    if world.endpoint_group:  # the `global-accelerator` scenarios' endpoint group
        group = sandbox.client("globalaccelerator", "us-west-2").describe_endpoint_group(
            EndpointGroupArn=world.endpoint_group)["EndpointGroup"]
        by_id = {e["EndpointId"]: e.get("Weight") for e in group["EndpointDescriptions"]}
        weights["accelerator"] = (by_id.get(world.blue_endpoint, 0), by_id.get(world.green_endpoint, 0))
    if world.lattice_listener:  # the `vpc-lattice` scenarios' service
        action = sandbox.client("vpc-lattice").get_listener(
            serviceIdentifier=world.lattice_service, listenerIdentifier=world.lattice_listener)["defaultAction"]
        by_id = {g["targetGroupIdentifier"]: g.get("weight") for g in action.get("forward", {}).get("targetGroups", [])}
        weights["lattice web"] = (by_id.get(world.lattice_blue_tg, 0), by_id.get(world.lattice_green_tg, 0))
    if world.record:  # the example environment's world has no records
        records = sandbox.client("route53").list_resource_record_sets(
            HostedZoneId=world.zone_id, StartRecordName=world.record, StartRecordType="A"
        )["ResourceRecordSets"]
        by_id = {r.get("SetIdentifier"): r.get("Weight") for r in records if r["Name"] == world.record}
        weights[world.record] = (by_id.get("blue"), by_id.get("green"))
    return weights


def format_weights(weights):
    return ", ".join(f"{target} blue {b} / green {g}" for target, (b, g) in weights.items())


def read_secret(sandbox, arn):
    """The Argo CD Secret registered for the cluster `arn` (by its cluster-ARN annotation):
    name, labels, annotations and decoded data, as the management cluster holds it."""
    context = ssl.create_default_context(cadata=base64.b64decode(sandbox.kube["caData"]).decode())
    request = urllib.request.Request(
        f"{sandbox.kube['server']}/api/v1/namespaces/argocd/secrets",
        headers={"Authorization": "Bearer sandbox-admin"},
    )
    secrets = json.load(urllib.request.urlopen(request, context=context))["items"]
    for secret in secrets:
        annotations = secret["metadata"].get("annotations", {})
        if annotations.get("cluster-canary/cluster-arn") == arn:
            data = {k: base64.b64decode(v).decode() for k, v in secret.get("data", {}).items()}
            return {"name": secret["metadata"]["name"], "labels": secret["metadata"].get("labels", {}),
                    "annotations": annotations, "data": data}
    return None


TERMINAL_EVENTS = {"ExecutionSucceeded", "ExecutionFailed", "ExecutionAborted", "ExecutionTimedOut"}


def settle_deadline(execution):
    """moto may report the final status a moment before the history's last events: wait up to
    5 s after the execution stopped for them."""
    stopped = execution.get("stopDate")
    return stopped.timestamp() - time.time() + time.monotonic() + 5 if stopped else 0


def state_sizes(event):
    """(state name or event type, bytes) of every state input/output and task result in a
    history event: what Step Functions caps at 256 KiB."""
    for key, field in (("stateEnteredEventDetails", "input"), ("stateExitedEventDetails", "output"),
                       ("taskSucceededEventDetails", "output")):
        details = event.get(key)
        if details and details.get(field) is not None:
            yield details.get("name", event["type"]), len(details[field].encode())


def describe_event(detail_type, detail):
    """A few words about one of cluster-canary's EventBridge events, as a subscriber received it."""
    line = detail_type
    if detail.get("step"):
        line += f" {detail['step']['weight']}%"
    if "error" in detail:
        line += f": {detail['error']}" + (f" ({detail['end']})" if "end" in detail else "")
    if detail.get("oldCluster"):
        line += f": old cluster {detail['oldCluster']['name']}"
    return line


def read_events(sandbox, execution_arn):
    """The execution's (or fleet execution's) EventBridge events that reached the sandbox's queue
    since the last read, as (detail-type, detail). Another execution's events read meanwhile are
    kept for it (a scenario may watch two at once)."""
    sqs = sandbox.client("sqs")
    while True:
        messages = sqs.receive_message(QueueUrl=sandbox.world.events_queue, MaxNumberOfMessages=10).get("Messages", [])
        if not messages:
            return sandbox.unread_events.pop(execution_arn, [])
        for message in messages:
            sqs.delete_message(QueueUrl=sandbox.world.events_queue, ReceiptHandle=message["ReceiptHandle"])
            event = json.loads(message["Body"])
            detail = event["detail"]
            # A fleet's events name the fleet execution.
            owner = detail.get("executionArn") or detail.get("fleetExecutionArn")
            sandbox.unread_events.setdefault(owner, []).append(
                (event["detail-type"], event["detail"]))


def events_after(sfn, execution_arn, seen):
    """The execution's history events after event `seen` (ids run 1, 2, ... in order), oldest
    first: read newest first, a page at a time, until a page reaches what was read before. A
    rollout's history grows to hundreds of events and is watched every half second; reading it
    whole each time was most of the sandbox's Step Functions traffic."""
    newest, token = [], None
    while True:
        page = sfn.get_execution_history(executionArn=execution_arn, reverseOrder=True, maxResults=100,
                                         **({"nextToken": token} if token else {}))
        newest += page["events"]
        token = page.get("nextToken")
        if not token or newest[-1]["id"] <= seen + 1:
            return [event for event in reversed(newest) if event["id"] > seen]


def watch(sandbox, execution_arn, on_event=None, out=print, timeout=300, verbose=False, on_notification=None,
          await_safety_net=True):
    """Follows an execution to its end. The live view is the operator CLI's (`cluster-canary
    watch`, its lines passed to `out`); this only records what the tests check and drives a
    scenario: `on_event(name, state)` is called as states end, `on_notification(detail_type,
    detail)` for its EventBridge events. When the execution ends the way the stack's SafetyNet
    rule matches, waits for what the safety net answered to the rule's delivery (unless
    `await_safety_net` is False: a caller that holds the delivery). Returns the Report."""
    sfn = sandbox.client("stepfunctions")
    viewer, reader = sandbox.cli_in_background(out, "watch", execution_arn, *(["--verbose"] if verbose else []))
    seen, ended, states, max_canary, notifications = 0, False, [], 0, []
    largest = (0, None)
    deadline = time.monotonic() + timeout
    try:
        while True:
            # Status first, history second, so the last history read comes after the final status.
            execution = sfn.describe_execution(executionArn=execution_arn)
            events = events_after(sfn, execution_arn, seen)
            for event in events:
                # The execution's input, as the first state takes it in, is the caller's (AWS
                # holds it to 256 KiB, and the first state refuses a plan over its own cap):
                # the state budget is for what the states keep.
                given = not states and "stateEnteredEventDetails" in event
                for where, size in ([] if given else state_sizes(event)):
                    largest = max(largest, (size, where))
                if "stateEnteredEventDetails" in event:
                    states.append(event["stateEnteredEventDetails"]["name"])
                details = event.get("stateExitedEventDetails")
                if details:
                    name = details["name"]
                    if name == CONTRACT["states"]["setWeights"]:
                        weights = read_weights(sandbox)
                        max_canary = max(max_canary, *(g * 100 // max(b + g, 1) for b, g in weights.values()))
                    if on_event:
                        on_event(name, json.loads(details.get("output") or "{}"))
            seen = events[-1]["id"] if events else seen
            ended = ended or any(e["type"] in TERMINAL_EVENTS for e in events)
            for detail_type, detail in read_events(sandbox, execution_arn):
                notifications.append((detail_type, detail))
                if on_notification:
                    on_notification(detail_type, detail)
            if execution["status"] != "RUNNING" and (ended or time.monotonic() > settle_deadline(execution)):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"execution {execution_arn} still running after {timeout} s")
            time.sleep(0.5)
        # The live view ends with the execution; its last lines come before the safety net's.
        cli_exit = viewer.wait(timeout=60)
        reader.join(timeout=10)
    finally:
        if viewer.poll() is None:
            viewer.kill()
            viewer.wait()
    plan = json.loads(execution.get("input") or "{}")
    cluster = plan.get("cluster", {}) if isinstance(plan, dict) else {}
    report = Report(
        execution_arn=execution_arn,
        status=execution["status"],
        error=execution.get("error"),
        cause=execution.get("cause"),
        states=states,
        max_canary=max_canary,
        largest_state=largest[0],
        largest_state_at=largest[1],
        secret=read_secret(sandbox, cluster_arn(cluster.get("name"), cluster.get("region")))
        if cluster.get("name") else None,
        events=notifications,
        cli_exit=cli_exit,
    )
    if notifications:
        # After the live view, not amid it: the queue is read on another clock than the history.
        out("EventBridge events received (rule -> SQS queue): "
            + "; ".join(describe_event(t, d) for t, d in notifications))
    # The stack's SafetyNet rule delivers the execution's end to its function (safety_net.py).
    if await_safety_net and sandbox.safety_net.matches(report.status):
        report.safety_net = sandbox.safety_net.answer_for(execution_arn)
    if report.safety_net:
        out(f"safety net (EventBridge rule SafetyNet delivered): {report.safety_net['reason']}")
    report.weights = read_weights(sandbox)
    out(f"final weights: {format_weights(report.weights)}")
    if cluster.get("name"):
        report.metrics = emitted_metrics(sandbox, f"{cluster.get('region')}/{cluster['name']}")
    return report


def watch_tokens(sandbox, execution_arn):
    """The task tokens of the execution's watchAlarms tasks (bakes and approval waits), in the
    order they were scheduled, as its history records them."""
    sfn, events, token = sandbox.client("stepfunctions"), [], None
    while True:
        page = sfn.get_execution_history(executionArn=execution_arn, maxResults=1000, **({"nextToken": token} if token else {}))
        events += page["events"]
        token = page.get("nextToken")
        if not token:
            break
    tokens = []
    for event in events:
        details = event.get("taskScheduledEventDetails")
        if not details or "watchAlarms" not in details["parameters"]:
            continue
        payload = json.loads(details["parameters"])["Payload"]
        tokens.append((json.loads(payload) if isinstance(payload, str) else payload)["taskToken"])
    return tokens


def wait_for_alarm_watch(sandbox, execution_arn, nth, timeout=60):
    """Waits until the execution's `nth` alarm watch (1 = its first watchAlarms task) is the one
    registered in the AlarmWatchTable: from then on an alarm's event fails that wait."""
    dynamodb = sandbox.client("dynamodb")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        tokens = watch_tokens(sandbox, execution_arn)
        # The watch is stored once per lookup key (each alarm name, the prefixes): every copy
        # must carry the task's token. (A test's look: the functions never scan the table.)
        items = dynamodb.scan(TableName=sandbox.alarm_watch_table, ConsistentRead=True,
                              FilterExpression="executionArn = :arn",
                              ExpressionAttributeValues={":arn": {"S": execution_arn}})["Items"]
        if len(tokens) >= nth and items and all(i["taskToken"]["S"] == tokens[nth - 1] for i in items):
            return
        time.sleep(0.2)
    raise TimeoutError(f"alarm watch {nth} of {execution_arn} not registered in {timeout} s")


def run(scenario, out=print, verbose=False, template=REPO / "template.yaml"):
    """Runs one scenario on a fresh sandbox, its stack deployed from `template`. Returns the
    Report."""
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}; one of {', '.join(SCENARIOS)}")
    with Sandbox(argocd_sim="degraded" if scenario == "apps-unhealthy" else "healthy", log=out,
                 template=template) as sandbox:
        if scenario == "datadog":
            return run_datadog(sandbox, out, verbose)
        if scenario.startswith("fleet"):
            ended, _, cli_exit = fleets.run_fleet(sandbox, scenario, out)
            return Report(execution_arn=ended["executionArn"], status=ended["status"], error=ended.get("error"),
                          cause=ended.get("cause"), cli_exit=cli_exit)
        if scenario.startswith("compare"):
            return run_compare(sandbox, scenario, out, verbose)
        if scenario == "error-budget":
            return run_error_budget(sandbox, out, verbose)
        if scenario.startswith("test-traffic"):
            out(f"scenario {scenario}: blue serves everything; creating EKS cluster green")
            create_green(sandbox)
            return test_traffic.run_test_traffic(sandbox, scenario, out, verbose)
        if scenario.startswith("prometheus"):
            with prometheus.Metrics({"blue": 0.01, "green": 0.001}, log=out) as metrics:
                return run_prometheus(sandbox, metrics, scenario, out, verbose)
        return run_on(sandbox, scenario, out, verbose)


def run_datadog(sandbox, out=print, verbose=False):
    """The canary judged by its error count in Datadog (the sandbox's API double, the keys in
    a secret): the count crosses its limit once the 50 % step is set, and the rollout rolls
    back."""
    out("scenario datadog: blue serves everything; creating EKS cluster green")
    out(f"start: {format_weights(read_weights(sandbox))}")
    datadog.set_errors(sandbox, "green", 2)
    create_green(sandbox)
    plan = manual_plan(sandbox)
    plan["analysis"] = datadog.analysis()
    execution_arn = start_manual(sandbox, plan, "green-datadog")
    out(f"started a rollout judged by Datadog ({sandbox.datadog_url}): {execution_arn}")

    def on_event(name, state):
        if name == CONTRACT["states"]["setWeights"] and state["cursor"]["step"]["weight"] == 50:
            out(">>> green's error count in Datadog goes to 40 (the limit is 25)")
            datadog.set_errors(sandbox, "green", 40)

    return watch(sandbox, execution_arn, on_event, out, verbose=verbose)


def run_prometheus(sandbox, metrics, scenario, out=print, verbose=False):
    """The canary judged by its error ratio in a real Prometheus: in `prometheus` it crosses
    the limit once the 50 % step is set, and the rollout rolls back; in `prometheus-healthy` it
    stays low, and the rollout promotes."""
    out(f"scenario {scenario}: blue serves everything; creating EKS cluster green")
    out(f"start: {format_weights(read_weights(sandbox))}")
    create_green(sandbox)
    plan = manual_plan(sandbox)
    plan["analysis"] = prometheus.analysis(metrics.url)
    execution_arn = start_manual(sandbox, plan, f"green-{scenario}")
    out(f"started a rollout judged by Prometheus ({metrics.url}): {execution_arn}")

    def on_event(name, state):
        at_half = name == CONTRACT["states"]["setWeights"] and state["cursor"]["step"]["weight"] == 50
        if scenario == "prometheus" and at_half:
            out(">>> green's error ratio in Prometheus goes to 0.2 (the limit is 0.05)")
            metrics.set("green", 0.2)

    return watch(sandbox, execution_arn, on_event, out, verbose=verbose)


def run_compare(sandbox, scenario, out=print, verbose=False):
    """The canary judged against the baseline (`analysis.compare`): in `compare` the new
    cluster answers 1.5 times slower than the old one from its first request, well under every
    threshold, and the comparison alone rolls it back; in `compare-spike` a load spike triples
    both clusters' latency at the 50 % step, and the rollout promotes."""
    out(f"scenario {scenario}: blue serves everything; creating EKS cluster green")
    out(f"start: {format_weights(read_weights(sandbox))}")
    create_green(sandbox)
    latencies = compare.Latencies()
    if scenario == "compare":
        latencies.canary_factor = 1.5
        out(">>> green answers 1.5x slower than blue (p99 ~0.15 s against ~0.10 s; the threshold is "
            f"{compare.LATENCY_LIMIT_SECONDS} s)")
    with AlbMetrics(sandbox, latencies) as alb:
        plan = manual_plan(sandbox)
        plan["analysis"] = compare.analysis(alb)
        if scenario == "compare-spike":
            # The 50 % step, where the spike comes, bakes past a whole comparison window: a
            # window's median moves only once more than half its periods are the spike's, and
            # the checks must see that however late the periods come (a busy machine).
            plan["steps"][1]["bakeSeconds"] = compare.LOOKBACK_SECONDS + 10
        # The first check must find enough samples on both sides.
        time.sleep(compare.MIN_SAMPLES)
        execution_arn = start_manual(sandbox, plan, f"green-{scenario}")
        out(f"started a rollout judged against the baseline: {execution_arn}")

        def on_event(name, state):
            at_half = name == CONTRACT["states"]["setWeights"] and state["cursor"]["step"]["weight"] == 50
            if scenario == "compare-spike" and at_half:
                out(">>> a load spike: both clusters answer 3x slower")
                latencies.load = 3.0

        return watch(sandbox, execution_arn, on_event, out, verbose=verbose)


def run_error_budget(sandbox, out=print, verbose=False):
    """The plan names an Application Signals SLO (`errorBudget`): its budget is spent when the
    rollout starts, and the rollout waits at its gate until the budget is back; then the new
    cluster answers 2 % of its requests with 5xx, well under every alarm, and spends the
    rollout's 2 % share of the budget within seconds: rolled back by that check alone."""
    out("scenario error-budget: blue serves everything; creating EKS cluster green")
    out(f"start: {format_weights(read_weights(sandbox))}")
    create_green(sandbox)
    error_budget.create_slo(sandbox)
    error_budget.served(sandbox, 1_000, 50)
    out(f">>> SLO {error_budget.SLO} (99 % over the last hour): 50 bad requests of 1,000, its budget spent")
    traffic = {"canary": {"RequestCount": 5_000, "HTTPCode_Target_5XX_Count": 100},
               "stable": {"RequestCount": 5_000, "HTTPCode_Target_5XX_Count": 0}}
    with AlbMetrics(sandbox, lambda second: traffic):
        plan = manual_plan(sandbox)
        plan["errorBudget"] = {"slos": [error_budget.SLO]}
        execution_arn = start_manual(sandbox, plan, "green-error-budget")
        out(f"started a rollout that spends at most 2 % of the SLO's budget: {execution_arn}")
        looks = []

        def on_event(name, state):
            if name == "FreezeGate":
                looks.append(state["freeze"]["frozen"])
                if len(looks) == 2:
                    out(">>> the service serves 1,000,000 good requests: a budget of 10,010, a rollout's share 200; "
                        "green answers 2 % of its requests with 5xx")
                    error_budget.served(sandbox, 1_000_000, 0)

        return watch(sandbox, execution_arn, on_event, out, verbose=verbose)


APPROVAL_TIMEOUT_SECONDS = 600


def nlb_plan(sandbox):
    """A plan a person writes for the NLB `web-tcp` alone: its TCP listener, stepped with a
    minimum dwell as long as the sandbox's bake."""
    world = sandbox.world
    plan = manual_plan(sandbox)
    plan["trafficTargets"] = [{"nlb": {
        "listenerArn": world.nlb_listener,
        "stableTargetGroupArn": world.tcp_blue_tg,
        "canaryTargetGroupArn": world.tcp_green_tg,
        "minStepSeconds": plan["bake"]["seconds"],
    }}]
    return plan


def accelerator_plan(sandbox):
    """A plan a person writes for the accelerator `edge` alone: blue's and green's load
    balancers weighted in its us-east-1 endpoint group."""
    world = sandbox.world
    plan = manual_plan(sandbox)
    plan["trafficTargets"] = [{"globalAccelerator": {
        "endpointGroupArn": world.endpoint_group,
        "stableEndpointId": world.blue_endpoint,
        "canaryEndpointId": world.green_endpoint,
    }}]
    return plan


def lattice_plan(sandbox):
    """A plan a person writes for the VPC Lattice service `web` alone: its listener's default
    action, blue's and green's target groups."""
    world = sandbox.world
    plan = manual_plan(sandbox)
    plan["trafficTargets"] = [{"vpcLattice": {
        "serviceIdentifier": world.lattice_service,
        "listenerIdentifier": world.lattice_listener,
        "stableTargetGroup": world.lattice_blue_tg,
        "canaryTargetGroup": world.lattice_green_tg,
    }}]
    return plan


# The scenarios that shift one other kind of target alone: what each seeds, and its plan.
ONE_TARGET_SCENARIOS = {
    "nlb": (seed_nlb, nlb_plan, "the NLB web-tcp's listener :443"),
    "global-accelerator": (seed_accelerator, accelerator_plan, "the accelerator edge's endpoint group in us-east-1"),
    "vpc-lattice": (seed_lattice, lattice_plan, "the VPC Lattice service web's listener :80"),
}


def run_one_target(sandbox, scenario, out=print, verbose=False):
    """`nlb`, `global-accelerator`, `vpc-lattice`: a rollout of that target to 100 %; `…-rollback`: green's 5xx
    alarm fires at 50 %."""
    kind = scenario.removesuffix("-rollback")
    _, plan, what = ONE_TARGET_SCENARIOS[kind]
    execution_arn = start_manual(sandbox, plan(sandbox), f"green-{scenario}")
    out(f"started a rollout of {what}: {execution_arn}")

    def on_event(name, state):
        if scenario.endswith("-rollback") and name == CONTRACT["states"]["setWeights"] \
                and state["cursor"]["step"]["weight"] == 50:
            out(">>> alarm web-green-5xx goes to ALARM")
            sandbox.alarm_events.set_state(
                "web-green-5xx", "ALARM",
                "Threshold Crossed: 1 datapoint [42.0] was greater than the threshold (10.0).",
            )

    return watch(sandbox, execution_arn, on_event, out, verbose=verbose)


def run_on(sandbox, scenario, out=print, verbose=False):
    one_target = ONE_TARGET_SCENARIOS.get(scenario.removesuffix("-rollback"))
    if one_target:
        one_target[0](sandbox.client, sandbox.world)
    out(f"scenario {scenario}: blue serves everything; creating EKS cluster green")
    out(f"start: {format_weights(read_weights(sandbox))}")
    create_green(sandbox)
    if one_target:
        return run_one_target(sandbox, scenario, out, verbose)
    if scenario == "approval":
        plan = manual_plan(sandbox)
        plan["approval"] = {"beforeSteps": [100], "timeoutSeconds": APPROVAL_TIMEOUT_SECONDS}
        execution_arn = start_manual(sandbox, plan, "green-approval")
        out(f"started a rollout that waits for a person before 100%: {execution_arn}")
        out("answer it from another terminal with the `export` line above, then the command printed below")
        return watch(sandbox, execution_arn, out=out, verbose=verbose, timeout=APPROVAL_TIMEOUT_SECONDS + 300)
    execution_arn = put_create_cluster_event(sandbox)
    out(f"CloudTrail's CreateCluster event, through the stack's rule: cluster-created started {execution_arn}")
    aborting = []

    def on_event(name, state):
        at_half = name == CONTRACT["states"]["setWeights"] and state["cursor"]["step"]["weight"] == 50
        if scenario == "rollback" and at_half:
            out(">>> alarm web-green-5xx goes to ALARM")
            sandbox.alarm_events.set_state(
                "web-green-5xx", "ALARM",
                "Threshold Crossed: 1 datapoint [42.0] was greater than the threshold (10.0).",
            )
        if scenario == "stopped" and at_half:
            out(">>> an operator runs: cluster-canary abort")
            aborting.append(sandbox.cli_in_background(out, "abort", execution_arn, "--reason", "stopped by hand in the sandbox"))

    report = watch(sandbox, execution_arn, on_event, out, verbose=verbose)
    for process, reader in aborting:
        # `abort` returns once the safety net (played by `watch` above) restored the baseline.
        report.abort_exit = process.wait(timeout=120)
        reader.join(timeout=10)
    return report

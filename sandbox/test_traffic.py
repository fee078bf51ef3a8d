"""The test-traffic scenarios (docs/traffic/test-traffic.md): before the first production weight,
a listener rule of the rollout's own sends the requests carrying `x-canary: green` to green's
target group alone, and the new cluster's own record `green.app.example.com` is checked to point
at its load balancer; a CloudWatch Synthetics canary (the harness's model,
tests/moto/synthetics.py, runs it as the scenario says) judges the stage.

- `test-traffic`: the canary's run passes; then the normal steps, and the rule goes at promotion.
- `test-traffic-fails`: the canary's run fails (`GET /checkout answered 503`): the rollout ends
  `TestTrafficFailed`, no user request ever reached green, the rule is deleted."""
import json
import urllib.request

from .world import ACCOUNT, REGION

CANARY = "green-smoke"
OWN_RECORD = "green.app.example.com."


def harness_runs(sandbox, runs):
    """The canaries' next runs, as the harness's control sets them (`{"<canary>": ["PASSED",
    {"state": "FAILED", "reason": "…"}]}`)."""
    request = urllib.request.Request(f"{sandbox.moto_endpoint}/_harness/synthetics/{ACCOUNT}/{REGION}",
                                     method="POST", data=json.dumps({"runs": runs}).encode())
    with urllib.request.urlopen(request) as answer:
        return json.load(answer)


def create_canary(sandbox):
    """A canary that calls the test address, READY (not running): the stage starts it."""
    sandbox.client("synthetics").create_canary(
        Name=CANARY, Code={"Handler": "index.handler", "S3Bucket": "code", "S3Key": "smoke.zip"},
        ArtifactS3Location="s3://artifacts/green", ExecutionRoleArn=f"arn:aws:iam::{ACCOUNT}:role/canary",
        Schedule={"Expression": "rate(1 minute)"}, RuntimeVersion="syn-nodejs-puppeteer-9.1")


def create_own_record(sandbox, name=OWN_RECORD):
    """The new cluster's own name, as ExternalDNS writes it: an alias of the load balancer the
    canary record points at."""
    route53, zone = sandbox.client("route53"), sandbox.world.zone_id
    green = next(r for r in route53.list_resource_record_sets(HostedZoneId=zone)["ResourceRecordSets"]
                 if r.get("SetIdentifier") == "green")
    route53.change_resource_record_sets(HostedZoneId=zone, ChangeBatch={"Changes": [{
        "Action": "UPSERT", "ResourceRecordSet": {"Name": name, "Type": "A", "AliasTarget": green["AliasTarget"]}}]})


def stage_plan(plan, **stage):
    """`plan` with a header stage judged by the canary (3 s, looked at every second)."""
    plan["testTraffic"] = {
        "conditions": {"httpHeader": {"name": "x-canary", "values": ["green"]}},
        "bakeSeconds": 3, "checkIntervalSeconds": 1, "syntheticsCanaries": [CANARY], **stage,
    }
    if any("route53" in t for t in plan["trafficTargets"]):
        plan["testTraffic"].setdefault("recordName", OWN_RECORD)
    return plan


def listener_rules(sandbox):
    """The listener's rules but its default: (priority, conditions, forward groups, tags)."""
    elbv2 = sandbox.client("elbv2")
    rules = [r for r in elbv2.describe_rules(ListenerArn=sandbox.world.listener)["Rules"] if not r["IsDefault"]]
    tags = {}
    if rules:
        for description in elbv2.describe_tags(ResourceArns=[r["RuleArn"] for r in rules])["TagDescriptions"]:
            tags[description["ResourceArn"]] = {t["Key"]: t["Value"] for t in description["Tags"]}
    return [(r["Priority"], r["Conditions"], [a.get("TargetGroupArn") for a in r["Actions"]], tags.get(r["RuleArn"], {}))
            for r in rules]


def set_runs(sandbox, outcome):
    """The canary's next run: `passed`, `failed`, or `none` (no run comes)."""
    runs = {"passed": ["PASSED"], "failed": [{"state": "FAILED", "reason": "GET /checkout answered 503"}],
            "none": []}[outcome]
    harness_runs(sandbox, {CANARY: runs})


def run_test_traffic(sandbox, scenario, out=print, verbose=False):
    from .scenarios import format_weights, manual_plan, read_weights, start_manual, watch
    create_canary(sandbox)
    create_own_record(sandbox)
    fails = scenario == "test-traffic-fails"
    set_runs(sandbox, "failed" if fails else "passed")
    plan = stage_plan(manual_plan(sandbox), bakeSeconds=4)
    execution_arn = start_manual(sandbox, plan, f"green-{scenario}")
    out(f"started a rollout whose first stage sends only requests with `x-canary: green` to green, judged by "
        f"the Synthetics canary {CANARY} (its run will {'fail' if fails else 'pass'}): {execution_arn}")

    def on_event(name, state):
        if name == "OpenTestTraffic":
            [(priority, _, _, _)] = listener_rules(sandbox)
            out(f">>> test rule at priority {priority} on the listener; user traffic still "
                f"{format_weights(read_weights(sandbox))}")

    return watch(sandbox, execution_arn, on_event, out, verbose=verbose)

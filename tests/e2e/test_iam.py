"""IAM enforced on the stack's roles: every call a function or the state machine makes is
authorized against its role's policies as the template grants them (sandbox/iam.py), so an
action or a resource the template forgets fails the rollout with AccessDenied, as on AWS."""
import shutil

from helpers import captured
from sandbox import scenarios
from sandbox.harness import REPO, Sandbox
from sandbox.world import ACCOUNT, REGION

BASELINE = {"listener :80": (100, 0), "app.example.com.": (100, 0)}


def template_copy(tmp_path, old, new):
    text = (REPO / "template.yaml").read_text()
    assert text.count(old) == 1, f"the template has exactly one {old!r}"
    copy = tmp_path / "template.yaml"
    copy.write_text(text.replace(old, new))
    # Its paths are relative to it, as `sam deploy` reads them.
    shutil.copytree(REPO / "statemachine", tmp_path / "statemachine")
    return copy


def role_of(sandbox, binary):
    name = sandbox.function(binary)
    role = sandbox.client("lambda").get_function_configuration(FunctionName=name)["Role"]
    return role.rsplit("/", 1)[1]


def test_every_call_of_a_rollout_is_authorized_as_its_callers_role():
    with Sandbox(log=captured) as sandbox:
        report = scenarios.run_on(sandbox, "happy", captured, False)
        assert report.status == "SUCCEEDED", report.cause
        decisions = sandbox.front.authorizer.decisions
        assert decisions and all(allowed for *_, allowed in decisions), \
            [d for d in decisions if not d[-1]]
        by_role = {}
        for caller, action, resources, _ in decisions:
            by_role.setdefault(caller.split(":assumed-role/")[1].split("/")[0], {}).setdefault(action, set()).update(resources)
        shift = by_role[role_of(sandbox, "shift-weights")]
        assert shift["elasticloadbalancing:ModifyListener"] == {sandbox.world.listener}, "checked on the listener's ARN"
        assert shift["route53:ChangeResourceRecordSets"] == {f"arn:aws:route53:::hostedzone/{sandbox.world.zone_id}"}
        assert "states:StartExecution" in by_role[role_of(sandbox, "cluster-created")]
        assert "eks:DescribeCluster" in by_role[role_of(sandbox, "register-cluster")]
        assert "cloudwatch:DescribeAlarms" in by_role[role_of(sandbox, "evaluate-alarms")]
        # The state machine's own calls, as its role.
        machine_role = sandbox.client("stepfunctions").describe_state_machine(
            stateMachineArn=sandbox.state_machine)["roleArn"].rsplit("/", 1)[1]
        machine = by_role[machine_role]
        assert machine["lambda:InvokeFunction"] >= {
            sandbox.client("lambda").get_function_configuration(FunctionName=sandbox.function(b))["FunctionArn"]
            for b in ("shift-weights", "evaluate-alarms", "register-cluster")}
        assert machine["events:PutEvents"] == {f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/default"}


def test_a_role_missing_an_action_fails_the_rollout_with_access_denied_before_traffic_moves(tmp_path):
    template = template_copy(
        tmp_path,
        "                - elasticloadbalancing:ModifyListener\n                - elasticloadbalancing:ModifyRule\n",
        "                - elasticloadbalancing:ModifyRule\n")
    with Sandbox(log=captured, template=template) as sandbox:
        report = scenarios.run_on(sandbox, "happy", captured, False)
        assert report.status == "FAILED"
        assert "AccessDenied" in report.cause and "elasticloadbalancing:ModifyListener" in report.cause, report.cause
        assert report.max_canary == 0, "nothing moved"
        assert scenarios.read_weights(sandbox) == BASELINE


def test_a_grant_narrowed_to_another_load_balancer_fails_the_rollout_with_access_denied():
    with Sandbox(log=captured, parameters={"LoadBalancerNamePrefix": "checkout-"}) as sandbox:
        report = scenarios.run_on(sandbox, "happy", captured, False)
        assert report.status == "FAILED"
        assert "AccessDenied" in report.cause and "elasticloadbalancing:ModifyListener" in report.cause, report.cause
        assert ":listener/app/web/" in report.cause, "the listener the grant does not cover is named"
        assert report.max_canary == 0, "nothing moved"
        assert scenarios.read_weights(sandbox) == BASELINE

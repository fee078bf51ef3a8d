"""The example environment deploys: infra/example-environment.yaml (the trail, the load balancer
and its target groups, green's alarm, Argo CD's role, the functions' access entries, the bus
policy for cluster accounts, people's topic) and infra/cluster-account.yaml (in a second
account) are created by moto's CloudFormation beside the deployed stack, as their READMEs say,
and a rollout then promotes over the world they made."""
import dataclasses
import json

from helpers import captured
from sandbox import scenarios
from sandbox import stack as stack_mod
from sandbox.harness import REPO, Sandbox
from sandbox.world import ACCOUNT, REGION

CLUSTER_ACCOUNT = "111122223333"


def in_account(sandbox, account, service):
    """The platform team's client in `account` (moto's account header: an administrator there)."""
    client = sandbox.client(service)
    client.meta.events.register("before-sign.*.*", lambda request, **_: request.headers.add_header(
        "x-moto-account-id", account))
    return client


def test_the_example_environment_deploys_and_a_rollout_promotes_over_it():
    with Sandbox(log=captured, traffic=False) as sandbox:
        stack = sandbox.stack.outputs
        cluster_account, cluster_account_resources = stack_mod.create(
            in_account(sandbox, CLUSTER_ACCOUNT, "cloudformation"), "cluster-canary-access",
            (REPO / "infra/cluster-account.yaml").read_text(),
            {"CentralAccountId": ACCOUNT, "RegisterClusterFunctionRoleArn": stack["RegisterClusterFunctionRoleArn"]})
        ec2 = sandbox.client("ec2")
        environment, resources = stack_mod.create(
            sandbox.client("cloudformation"), "web-environment",
            (REPO / "infra/example-environment.yaml").read_text(), {
                "VpcId": ec2.describe_vpcs()["Vpcs"][0]["VpcId"],
                "PublicSubnetIds": ",".join(s["SubnetId"] for s in ec2.describe_subnets()["Subnets"][:2]),
                "ManagementClusterName": "hub",
                "ArgoCdControllerRoleArn": f"arn:aws:iam::{ACCOUNT}:role/argocd-application-controller",
                "RegisterClusterFunctionRoleArn": stack["RegisterClusterFunctionRoleArn"],
                "ClusterCreatedFunctionRoleArn": stack["ClusterCreatedFunctionRoleArn"],
                "ShiftWeightsFunctionRoleArn": stack["ShiftWeightsFunctionRoleArn"],
                "NotifyEmail": "sre@example.com",
                "ClusterAccountIds": CLUSTER_ACCOUNT,
            })

        # What the stack's rules and functions rely on exists, as the templates say.
        cloudtrail = sandbox.client("cloudtrail")
        trail = resources["ManagementEventsTrail"]
        assert cloudtrail.get_trail_status(Name=trail)["IsLogging"], "EKS calls reach EventBridge only through a trail"
        assert cloudtrail.get_event_selectors(TrailName=trail)["EventSelectors"][0]["IncludeManagementEvents"]
        assert json.loads(sandbox.client("s3").get_bucket_policy(Bucket=resources["TrailBucket"])["Policy"])
        bus_policy = json.loads(sandbox.client("events").describe_event_bus(Name="default")["Policy"])
        assert CLUSTER_ACCOUNT in json.dumps(bus_policy["Statement"]), "the cluster account may put its EKS events here"
        eks = sandbox.client("eks")
        for output in ("RegisterClusterFunctionRoleArn", "ClusterCreatedFunctionRoleArn", "ShiftWeightsFunctionRoleArn"):
            entry = eks.describe_access_entry(clusterName="hub", principalArn=stack[output])["accessEntry"]
            assert entry["kubernetesGroups"] == ["cluster-canary"], output
        [alarm] = sandbox.client("cloudwatch").describe_alarms(AlarmNames=["web-green-5xx"])["MetricAlarms"]
        dimensions = {d["Name"]: d["Value"] for d in alarm["Dimensions"]}
        assert dimensions["TargetGroup"] == environment["GreenTargetGroupArn"].split(":", 5)[5]
        topic = sandbox.client("sns").get_topic_attributes(TopicArn=environment["RolloutEventsTopicArn"])["Attributes"]
        assert "events.amazonaws.com" in topic["Policy"]
        access_role = in_account(sandbox, CLUSTER_ACCOUNT, "iam").get_role(RoleName="cluster-canary-access")["Role"]
        assert access_role["Arn"] == cluster_account["ClusterAccessRoleArn"]
        assert stack["RegisterClusterFunctionRoleArn"] in json.dumps(access_role["AssumeRolePolicyDocument"])
        assert "ForwardEksCalls" in cluster_account_resources

        # A rollout over the load balancer, target groups and alarm the environment made.
        sandbox.world = dataclasses.replace(
            sandbox.world, listener=environment["ListenerArn"], blue_tg=environment["BlueTargetGroupArn"],
            green_tg=environment["GreenTargetGroupArn"], alarms=["web-green-5xx"])
        assert scenarios.read_weights(sandbox) == {"listener :80": (100, 0)}
        scenarios.create_green(sandbox)
        plan = {
            "cluster": {"name": "green", "region": REGION},
            "trafficTargets": [{"alb": {
                "listenerArn": environment["ListenerArn"],
                "stableTargetGroupArn": environment["BlueTargetGroupArn"],
                "canaryTargetGroupArn": environment["GreenTargetGroupArn"],
            }}],
            "steps": [{"weight": 25}, {"weight": 100}],
            "bake": {"seconds": 4, "checkIntervalSeconds": 2},
            "analysis": {"alarms": {"names": ["web-green-5xx"]}, "failureLimit": 1},
            "argocd": {"labels": {"fleet": "web"}, "minApps": 2, "appsTimeoutSeconds": 60,
                       "roleArn": environment["ArgoCdDeployerRoleArn"]},
        }
        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "example-environment"), out=captured)
        assert report.status == "SUCCEEDED", report.cause
        assert report.weights == {"listener :80": (0, 100)}
        secret = scenarios.read_secret(sandbox, scenarios.cluster_arn("green"))
        assert json.loads(secret["data"]["config"])["awsAuthConfig"]["roleARN"] == environment["ArgoCdDeployerRoleArn"]

"""The sandbox's world, seeded into moto and the Kubernetes API test server:

- EKS clusters `hub` (where Argo CD runs) and `blue` (serving all traffic today);
- an ALB `web` whose listener forwards to blue's target group, green's attached at weight 0;
- a hosted zone example.com with weighted alias records app.example.com, blue 100 / green 0;
- CloudWatch alarms web-green-5xx and web-green-latency (OK);
- the Secrets Manager secret the functions use to reach Argo CD's namespace on `hub`;
- an EventBridge rule that delivers cluster-canary's events (source `cluster-canary`) to the
  SQS queue cluster-canary-events, which the live view reads and prints;
- the profile `web` that a cluster opts into with the tag cluster-canary/profile=web.

`seed(..., traffic=False)` leaves out the load balancer, the records, the alarms and the
profile: infra/example-environment.yaml, deployed over it, makes its own (test_example_environment.py).
"""
import json
from dataclasses import dataclass

REGION = "us-east-1"
ACCOUNT = "123456789012"
CONNECTION_SECRET = "argocd-hub"
# The world's load balancer; the deployment narrows its write grant to this name.
LOAD_BALANCER = "web"


@dataclass
class World:
    listener: str
    blue_tg: str
    green_tg: str
    zone_id: str
    record: str
    alarms: list
    profiles: dict
    events_queue: str
    # The NLB the `nlb` scenarios make (`seed_nlb`): its TCP listener and target groups.
    nlb_listener: str = None
    tcp_blue_tg: str = None
    tcp_green_tg: str = None
    # The accelerator the `global-accelerator` scenarios make (`seed_accelerator`): its endpoint
    # group in us-east-1 and the two clusters' load balancers in it.
    endpoint_group: str = None
    blue_endpoint: str = None
    green_endpoint: str = None
    # The VPC Lattice service the `vpc-lattice` scenarios make (`seed_lattice`): its listener
    # and the two clusters' target groups (IDs).
    lattice_service: str = None
    lattice_listener: str = None
    lattice_blue_tg: str = None
    lattice_green_tg: str = None


def profile(listener, blue_tg, zone_id, record):
    """Baking is scaled down so a rollout takes about a minute: 3 checks 2 s apart per step."""
    return {
        "trafficTargets": [
            {"alb": {"listenerArn": listener, "stableTargetGroupArn": blue_tg}},
            {
                "route53": {
                    "hostedZoneId": zone_id,
                    "recordName": record,
                    "recordType": "A",
                    "stableSetIdentifier": "blue",
                }
            },
        ],
        "steps": [{"weight": 10}, {"weight": 50}, {"weight": 100}],
        "bake": {"seconds": 6, "checkIntervalSeconds": 2},
        "analysis": {"alarms": {"prefixes": ["web-green-"]}, "failureLimit": 1},
        # Long enough for the sandbox's stand-in controllers (tests/e2e) to put weights back.
        "rollback": {"settleSeconds": 4},
        "argocd": {"labels": {"fleet": "web"}, "minApps": 2, "appsTimeoutSeconds": 60},
    }


def seed(aws, kube, traffic=True):
    """`aws(service)` gives a boto3 client; `kube` is {"server", "caData", "token"}. Without
    `traffic`, the load balancer, its records and alarms (and so the profile) are left out: the
    world infra/example-environment.yaml then completes."""
    eks, ec2, route53, secrets = (aws(s) for s in ("eks", "ec2", "route53", "secretsmanager"))
    subnets = [s["SubnetId"] for s in ec2.describe_subnets()["Subnets"]][:2]
    for name in ("hub", "blue"):
        eks.create_cluster(
            name=name,
            version="1.33",
            roleArn=f"arn:aws:iam::{ACCOUNT}:role/eks-cluster",
            resourcesVpcConfig={"subnetIds": subnets},
        )
    zone_id = route53.create_hosted_zone(Name="example.com.", CallerReference="sandbox")["HostedZone"]["Id"].split("/")[-1]
    secrets.create_secret(Name=CONNECTION_SECRET, SecretString=json.dumps(kube))

    # What infra/ does with an SNS topic for people, the sandbox does with a queue it reads.
    sqs, events = aws("sqs"), aws("events")
    queue = sqs.create_queue(QueueName="cluster-canary-events")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(Name="cluster-canary-events", EventPattern=json.dumps({"source": ["cluster-canary"]}))
    events.put_targets(Rule="cluster-canary-events", Targets=[{"Id": "queue", "Arn": queue_arn}])
    if not traffic:
        return World(listener=None, blue_tg=None, green_tg=None, zone_id=zone_id, record=None, alarms=[],
                     profiles={}, events_queue=queue)
    listener, blue_tg, green_tg, record, alarms = seed_traffic(aws, subnets, zone_id)
    return World(
        listener=listener,
        blue_tg=blue_tg,
        green_tg=green_tg,
        zone_id=zone_id,
        record=record,
        alarms=alarms,
        profiles={"web": profile(listener, blue_tg, zone_id, record)},
        events_queue=queue,
    )


def seed_traffic(aws, subnets, zone_id):
    """The load balancer `web` on blue, the weighted records over it, green's alarms."""
    ec2, elbv2, route53, cloudwatch = (aws(s) for s in ("ec2", "elbv2", "route53", "cloudwatch"))
    vpc_id = ec2.describe_vpcs()["Vpcs"][0]["VpcId"]
    lb = elbv2.create_load_balancer(Name=LOAD_BALANCER, Subnets=subnets, Type="application")["LoadBalancers"][0]

    def target_group(name):
        return elbv2.create_target_group(Name=name, Protocol="HTTP", Port=8080, VpcId=vpc_id, TargetType="ip")[
            "TargetGroups"
        ][0]["TargetGroupArn"]

    blue_tg, green_tg = target_group("web-blue"), target_group("web-green")
    listener = elbv2.create_listener(
        LoadBalancerArn=lb["LoadBalancerArn"],
        Protocol="HTTP",
        Port=80,
        DefaultActions=[
            {
                "Type": "forward",
                "ForwardConfig": {
                    "TargetGroups": [{"TargetGroupArn": blue_tg, "Weight": 100}, {"TargetGroupArn": green_tg, "Weight": 0}]
                },
            }
        ],
    )["Listeners"][0]["ListenerArn"]

    record = "app.example.com."
    route53.change_resource_record_sets(
        HostedZoneId=zone_id,
        ChangeBatch={
            "Changes": [
                {
                    "Action": "CREATE",
                    "ResourceRecordSet": {
                        "Name": record,
                        "Type": "A",
                        "SetIdentifier": side,
                        "Weight": weight,
                        "AliasTarget": {
                            "HostedZoneId": lb["CanonicalHostedZoneId"],
                            "DNSName": lb["DNSName"],
                            "EvaluateTargetHealth": True,
                        },
                    },
                }
                for side, weight in (("blue", 100), ("green", 0))
            ]
        },
    )

    alarms = ["web-green-5xx", "web-green-latency"]
    for name in alarms:
        cloudwatch.put_metric_alarm(
            AlarmName=name,
            Namespace="AWS/ApplicationELB",
            MetricName="HTTPCode_Target_5XX_Count" if name.endswith("5xx") else "TargetResponseTime",
            Statistic="Sum",
            Period=60,
            EvaluationPeriods=1,
            Threshold=10,
            ComparisonOperator="GreaterThanThreshold",
        )
    return listener, blue_tg, green_tg, record, alarms


def seed_nlb(aws, world):
    """A Network Load Balancer `web-tcp` (named within the deployment's write grant) whose TCP
    listener :443 forwards to blue's TCP target group; green's exists, not attached (Prepare
    attaches it at weight 0). Recorded on `world`."""
    ec2, elbv2 = aws("ec2"), aws("elbv2")
    vpc_id = ec2.describe_vpcs()["Vpcs"][0]["VpcId"]
    subnets = [s["SubnetId"] for s in ec2.describe_subnets()["Subnets"]][:2]
    lb = elbv2.create_load_balancer(Name=f"{LOAD_BALANCER}-tcp", Subnets=subnets, Type="network")["LoadBalancers"][0]

    def target_group(name):
        return elbv2.create_target_group(Name=name, Protocol="TCP", Port=8443, VpcId=vpc_id, TargetType="ip")[
            "TargetGroups"
        ][0]["TargetGroupArn"]

    world.tcp_blue_tg, world.tcp_green_tg = target_group("tcp-blue"), target_group("tcp-green")
    world.nlb_listener = elbv2.create_listener(
        LoadBalancerArn=lb["LoadBalancerArn"],
        Protocol="TCP",
        Port=443,
        DefaultActions=[{"Type": "forward", "ForwardConfig": {"TargetGroups": [{"TargetGroupArn": world.tcp_blue_tg, "Weight": 100}]}}],
    )["Listeners"][0]["ListenerArn"]


def seed_lattice(aws, world):
    """A VPC Lattice service `web` with an HTTP listener :80 whose default action forwards to
    blue's target group `web-blue` alone; green's `web-green` exists with a target registered,
    not in the action yet (Prepare adds it at weight 0). Recorded on `world` (IDs)."""
    lattice = aws("vpc-lattice")
    groups = []
    for cluster, address in (("blue", "10.0.1.10"), ("green", "10.0.2.10")):
        group = lattice.create_target_group(name=f"{LOAD_BALANCER}-{cluster}", type="IP", config={
            "port": 80, "protocol": "HTTP", "vpcIdentifier": "vpc-0123456789abcdef0"})["id"]
        lattice.register_targets(targetGroupIdentifier=group, targets=[{"id": address, "port": 8080}])
        groups.append(group)
    world.lattice_blue_tg, world.lattice_green_tg = groups
    world.lattice_service = lattice.create_service(name=LOAD_BALANCER)["id"]
    world.lattice_listener = lattice.create_listener(
        serviceIdentifier=world.lattice_service, name="http", protocol="HTTP", port=80,
        defaultAction={"forward": {"targetGroups": [{"targetGroupIdentifier": world.lattice_blue_tg, "weight": 100}]}},
    )["id"]


def seed_accelerator(aws, world):
    """A Global Accelerator `edge` (its API in us-west-2) with a TCP listener :443 and an
    endpoint group in us-east-1 holding the ALB `web` (blue's) at weight 100; green's own ALB
    `web-green` exists, not in the group yet (Prepare adds it at weight 0). Recorded on `world`."""
    ec2, elbv2 = aws("ec2"), aws("elbv2")
    subnets = [s["SubnetId"] for s in ec2.describe_subnets()["Subnets"]][:2]
    world.blue_endpoint = elbv2.describe_load_balancers(Names=[LOAD_BALANCER])["LoadBalancers"][0]["LoadBalancerArn"]
    world.green_endpoint = elbv2.create_load_balancer(Name=f"{LOAD_BALANCER}-green", Subnets=subnets)[
        "LoadBalancers"][0]["LoadBalancerArn"]
    ga = aws("globalaccelerator", "us-west-2")
    accelerator = ga.create_accelerator(Name="edge", IdempotencyToken="edge")["Accelerator"]["AcceleratorArn"]
    listener = ga.create_listener(AcceleratorArn=accelerator, PortRanges=[{"FromPort": 443, "ToPort": 443}],
                                  Protocol="TCP", IdempotencyToken="edge-443")["Listener"]["ListenerArn"]
    world.endpoint_group = ga.create_endpoint_group(
        ListenerArn=listener, EndpointGroupRegion=REGION, IdempotencyToken="edge-use1",
        EndpointConfigurations=[{"EndpointId": world.blue_endpoint, "Weight": 100}],
    )["EndpointGroup"]["EndpointGroupArn"]

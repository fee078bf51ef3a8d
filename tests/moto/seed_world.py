"""Seeds a moto server with the world the shift-weights integration tests run against and
prints its identifiers as JSON on stdout.

World: an internet-facing ALB `web` with
  - target groups `blue` (stable), `green` (canary), `other` (a third, foreign one);
  - listener :80 whose default action forwards to blue only (green not attached yet);
  - a rule (/api/*) on it forwarding blue 100 / green 0 with target group stickiness on;
  - listener :8080 whose default action is a fixed response (not a forward);
  - listener :8081 forwarding blue 50 / other 50 (a target group the plan does not name);
an NLB `tcp` with TCP target groups `tcp-blue` (stable), `tcp-green` (canary), a UDP one `dns`,
and a TCP listener :443 forwarding to tcp-blue only;
a hosted zone `example.com.` with weighted records, blue 100 / green 0:
  - `app.example.com.` A, alias records to the ALB;
  - `www.example.com.` CNAME, TTL 60;
  - `slow.example.com.` CNAME, TTL 3600;
and a state machine `rollout` (never executed by moto in its default mode, so an execution
started on it stays RUNNING: what the concurrent-rollout check needs).

Usage: python seed_world.py http://127.0.0.1:PORT
"""
import json
import sys

import boto3

REGION = "us-east-1"


def client(service, endpoint):
    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )


def main(endpoint):
    ec2 = client("ec2", endpoint)
    elbv2 = client("elbv2", endpoint)
    route53 = client("route53", endpoint)
    sfn = client("stepfunctions", endpoint)

    vpc_id = ec2.describe_vpcs()["Vpcs"][0]["VpcId"]
    subnets = [s["SubnetId"] for s in ec2.describe_subnets()["Subnets"]][:2]
    lb = elbv2.create_load_balancer(Name="web", Subnets=subnets, Type="application")["LoadBalancers"][0]

    def target_group(name):
        return elbv2.create_target_group(Name=name, Protocol="HTTP", Port=80, VpcId=vpc_id, TargetType="ip")[
            "TargetGroups"
        ][0]["TargetGroupArn"]

    blue, green, other = target_group("blue"), target_group("green"), target_group("other")

    def forward(*weights, sticky=False):
        return [
            {
                "Type": "forward",
                "ForwardConfig": {
                    "TargetGroups": [{"TargetGroupArn": arn, "Weight": w} for arn, w in weights],
                    "TargetGroupStickinessConfig": {"Enabled": sticky, "DurationSeconds": 300}
                    if sticky
                    else {"Enabled": False},
                },
            }
        ]

    def listener(port, actions):
        return elbv2.create_listener(
            LoadBalancerArn=lb["LoadBalancerArn"], Protocol="HTTP", Port=port, DefaultActions=actions
        )["Listeners"][0]["ListenerArn"]

    main_listener = listener(80, forward((blue, 100)))
    rule = elbv2.create_rule(
        ListenerArn=main_listener,
        Priority=10,
        Conditions=[{"Field": "path-pattern", "Values": ["/api/*"]}],
        Actions=forward((blue, 100), (green, 0), sticky=True),
    )["Rules"][0]["RuleArn"]
    fixed_listener = listener(
        8080, [{"Type": "fixed-response", "FixedResponseConfig": {"StatusCode": "503", "ContentType": "text/plain"}}]
    )
    foreign_listener = listener(8081, forward((blue, 50), (other, 50)))

    nlb = elbv2.create_load_balancer(Name="tcp", Subnets=subnets, Type="network")["LoadBalancers"][0]

    def network_group(name, protocol="TCP", port=443):
        return elbv2.create_target_group(Name=name, Protocol=protocol, Port=port, VpcId=vpc_id, TargetType="ip")[
            "TargetGroups"
        ][0]["TargetGroupArn"]

    tcp_blue, tcp_green, udp = network_group("tcp-blue"), network_group("tcp-green"), network_group("dns", "UDP", 53)
    nlb_listener = elbv2.create_listener(
        LoadBalancerArn=nlb["LoadBalancerArn"],
        Protocol="TCP",
        Port=443,
        DefaultActions=[{"Type": "forward", "ForwardConfig": {"TargetGroups": [{"TargetGroupArn": tcp_blue, "Weight": 100}]}}],
    )["Listeners"][0]["ListenerArn"]

    zone_id = route53.create_hosted_zone(Name="example.com.", CallerReference="seed")["HostedZone"]["Id"].split("/")[-1]

    def weighted(name, rtype, set_id, weight, ttl=None, value=None):
        record = {"Name": name, "Type": rtype, "SetIdentifier": set_id, "Weight": weight}
        if value is None:
            record["AliasTarget"] = {
                "HostedZoneId": lb["CanonicalHostedZoneId"],
                "DNSName": lb["DNSName"],
                "EvaluateTargetHealth": True,
            }
        else:
            record["TTL"] = ttl
            record["ResourceRecords"] = [{"Value": value}]
        return {"Action": "CREATE", "ResourceRecordSet": record}

    route53.change_resource_record_sets(
        HostedZoneId=zone_id,
        ChangeBatch={
            "Changes": [
                weighted("app.example.com.", "A", "blue", 100),
                weighted("app.example.com.", "A", "green", 0),
                weighted("www.example.com.", "CNAME", "blue", 100, 60, "blue.example.net"),
                weighted("www.example.com.", "CNAME", "green", 0, 60, "green.example.net"),
                weighted("slow.example.com.", "CNAME", "blue", 100, 3600, "blue.example.net"),
                weighted("slow.example.com.", "CNAME", "green", 0, 3600, "green.example.net"),
            ]
        },
    )

    state_machine = sfn.create_state_machine(
        name="rollout",
        definition=json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}),
        roleArn="arn:aws:iam::123456789012:role/rollout",
    )["stateMachineArn"]

    json.dump(
        {
            "listener": main_listener,
            "rule": rule,
            "fixedListener": fixed_listener,
            "foreignListener": foreign_listener,
            "blue": blue,
            "green": green,
            "other": other,
            "lbDnsName": lb["DNSName"],
            "nlbListener": nlb_listener,
            "tcpBlue": tcp_blue,
            "tcpGreen": tcp_green,
            "udpGroup": udp,
            "zoneId": zone_id,
            "stateMachine": state_machine,
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main(sys.argv[1])

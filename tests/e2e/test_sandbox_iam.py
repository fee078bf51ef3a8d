"""The sandbox's IAM (sandbox/iam.py) without a sandbox: how it reads a request's action and
resources from botocore's models and the service authorization data, how it evaluates a
role's statements, and that its refusals read, to botocore's own parsers, as AWS's."""
import json

import botocore.session
import cbor2
import pytest
from botocore.parsers import create_parser

from sandbox import iam

ACCOUNT = "123456789012"
LISTENER = f"arn:aws:elasticloadbalancing:us-east-1:{ACCOUNT}:listener/app/web/abc/def"
GA_GROUP = (f"arn:aws:globalaccelerator::{ACCOUNT}:accelerator/1234abcd-abcd-1234-abcd-1234abcdefgh/listener/0123vxyz"
            "/endpoint-group/098765zyxwvu")


def asks(method, path, signing_name, body=b"", **headers):
    """(IAM action, resources) of a request, as the front door's authorizer reads it."""
    signed = {"Authorization": f"AWS4-HMAC-SHA256 Credential=ASIAEXAMPLE/20261126/us-east-1/{signing_name}/aws4_request, "
                               "SignedHeaders=host, Signature=0"}
    signed.update({k.replace("_", "-"): v for k, v in headers.items()})
    model, operation, params = iam.service_models().operation(iam.Request(method, path, signed, body))
    prefix, action, params = iam.iam_action(model, operation, params)
    return f"{prefix}:{action}", iam.resource_arns(iam.service_authorization(), prefix, action, params, "us-east-1", ACCOUNT)


@pytest.mark.parametrize("request_, expected", [
    (("POST", "/", "elasticloadbalancing",
      b"Action=ModifyListener&Version=2015-12-01&ListenerArn=" + LISTENER.replace(":", "%3A").replace("/", "%2F").encode()
      + b"&DefaultActions.member.1.Type=forward"),
     ("elasticloadbalancing:ModifyListener", [LISTENER])),
    (("POST", "/", "elasticloadbalancing", b"Action=DescribeListeners&Version=2015-12-01"),
     ("elasticloadbalancing:DescribeListeners", ["*"])),
    (("GET", "/clusters/green", "eks"), ("eks:DescribeCluster", [f"arn:aws:eks:us-east-1:{ACCOUNT}:cluster/green"])),
    (("POST", "/2015-03-31/functions/arn%3Aaws%3Alambda%3Aus-east-1%3A123456789012%3Afunction%3Ashift/invocations", "lambda"),
     ("lambda:InvokeFunction", [f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:shift"])),
    (("POST", "/2015-03-31/functions/cluster-canary-hook-smoke/invocations", "lambda"),
     ("lambda:InvokeFunction", [f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:cluster-canary-hook-smoke"])),
    (("POST", "/2013-04-01/hostedzone/Z123/rrset/", "route53"),
     ("route53:ChangeResourceRecordSets", ["arn:aws:route53:::hostedzone/Z123"])),
    (("GET", "/2013-04-01/healthcheck/H1/status", "route53"),
     ("route53:GetHealthCheckStatus", ["arn:aws:route53:::healthcheck/H1"])),
    (("POST", "/", "dynamodb", json.dumps({"RequestItems": {"watches": [{"PutRequest": {"Item": {}}}]}}).encode(),
      {"X-Amz-Target": "DynamoDB_20120810.BatchWriteItem"}),
     ("dynamodb:BatchWriteItem", [f"arn:aws:dynamodb:us-east-1:{ACCOUNT}:table/watches"])),
    (("POST", "/", "events", json.dumps({"Entries": [{"Source": "s", "DetailType": "d", "Detail": "{}"}]}).encode(),
      {"X-Amz-Target": "AWSEvents.PutEvents"}),
     ("events:PutEvents", [f"arn:aws:events:us-east-1:{ACCOUNT}:event-bus/default"])),
    # An SSM path is authorized as its own parameter's ARN.
    (("POST", "/", "ssm", json.dumps({"Path": "/cluster-canary/cc/health/us-east-1"}).encode(),
      {"X-Amz-Target": "AmazonSSM.GetParametersByPath"}),
     ("ssm:GetParametersByPath", [f"arn:aws:ssm:us-east-1:{ACCOUNT}:parameter/cluster-canary/cc/health/us-east-1"])),
    # Lambda's on-failure record, sent as the function's role: the queue named by its URL.
    (("POST", "/", "sqs", json.dumps({"QueueUrl": f"http://127.0.0.1:5000/{ACCOUNT}/intake-dlq", "MessageBody": "{}"}).encode(),
      {"X-Amz-Target": "AmazonSQS.SendMessage"}),
     ("sqs:SendMessage", [f"arn:aws:sqs:us-east-1:{ACCOUNT}:intake-dlq"])),
    (("POST", "/", "states", json.dumps({"taskToken": "t", "error": "e"}).encode(),
      {"X-Amz-Target": "AWSStepFunctions.SendTaskFailure"}),
     ("states:SendTaskFailure", ["*"])),
    # S3's operations on an object share a path: told apart by the query and the headers.
    (("GET", "/plans/fleet-plans/web/abc.json?x-id=GetObject", "s3"),
     ("s3:GetObject", ["arn:aws:s3:::plans/fleet-plans/web/abc.json"])),
    (("GET", "/plans/fleet-plans/web/abc.json?tagging", "s3"),
     ("s3:GetObjectTagging", ["arn:aws:s3:::plans/fleet-plans/web/abc.json"])),
    (("PUT", "/plans/fleet-plans/web/abc.json?x-id=CopyObject", "s3", b"", {"x-amz-copy-source": "plans/other.json"}),
     ("s3:PutObject", ["arn:aws:s3:::plans/fleet-plans/web/abc.json"])),
    # Global Accelerator (the moto harness's own service): its endpoint group's ARN, as named.
    (("POST", "/", "globalaccelerator", json.dumps({"EndpointGroupArn": GA_GROUP}).encode(),
      {"X-Amz-Target": "GlobalAccelerator_V20180706.UpdateEndpointGroup"}),
     ("globalaccelerator:UpdateEndpointGroup", [GA_GROUP])),
    # VPC Lattice's identifiers (an ID or an ARN) fill its ARN formats' ids.
    (("PATCH", "/services/svc-0123456789abcdef0/listeners/listener-0123456789abcdef0/rules/rule-0123456789abcdef0",
      "vpc-lattice", json.dumps({"action": {"fixedResponse": {"statusCode": 404}}}).encode()),
     ("vpc-lattice:UpdateRule", [f"arn:aws:vpc-lattice:us-east-1:{ACCOUNT}:service/svc-0123456789abcdef0"
                                 "/listener/listener-0123456789abcdef0/rule/rule-0123456789abcdef0"])),
    (("GET", "/services/svc-0123456789abcdef0/listeners/" + f"arn:aws:vpc-lattice:us-east-1:{ACCOUNT}:service/"
      "svc-0123456789abcdef0/listener/listener-0123456789abcdef0".replace(":", "%3A").replace("/", "%2F"), "vpc-lattice"),
     ("vpc-lattice:GetListener", [f"arn:aws:vpc-lattice:us-east-1:{ACCOUNT}:service/svc-0123456789abcdef0"
                                  "/listener/listener-0123456789abcdef0"])),
    (("POST", "/service/GraniteServiceVersion20100801/operation/DescribeAlarms", "monitoring",
      cbor2.dumps({"AlarmNamePrefix": "web-"}), {"smithy-protocol": "rpc-v2-cbor"}),
     ("cloudwatch:DescribeAlarms", [f"arn:aws:cloudwatch:us-east-1:{ACCOUNT}:alarm:{iam.UNKNOWN}"])),
])
def test_a_requests_action_and_resources_come_from_the_models_and_the_authorization_data(request_, expected):
    method, path, service, *rest = request_
    body = rest[0] if rest else b""
    headers = rest[1] if len(rest) > 1 else {}
    assert asks(method, path, service, body, **headers) == expected


def test_a_part_the_request_cannot_tell_is_covered_only_by_a_wildcard():
    action, [entry] = asks("GET", "/clusters/green/access-entries/arn%3Aaws%3Aiam%3A%3A1%3Arole%2Fargocd", "eks")
    assert action == "eks:DescribeAccessEntry" and iam.UNKNOWN in entry
    grant = {"Statement": [{"Effect": "Allow", "Action": "eks:*",
                            "Resource": f"arn:aws:eks:*:{ACCOUNT}:access-entry/*"}]}
    narrower = {"Statement": [{"Effect": "Allow", "Action": "eks:*",
                               "Resource": f"arn:aws:eks:*:{ACCOUNT}:access-entry/green/role/*"}]}
    assert iam.evaluate([grant], action, [entry])
    assert not iam.evaluate([narrower], action, [entry]), "a literal never matches what the request cannot tell"


def test_statements_are_evaluated_as_iam_evaluates_them():
    allow = {"Effect": "Allow", "Action": "ElasticLoadBalancing:Modify*", "Resource": "arn:aws:elasticloadbalancing:*:*:listener/app/web*"}
    deny = {"Effect": "Deny", "Action": "elasticloadbalancing:ModifyListener", "Resource": "*"}
    assert iam.evaluate([{"Statement": [allow]}], "elasticloadbalancing:ModifyListener", [LISTENER]), "actions ignore case"
    assert not iam.evaluate([{"Statement": allow}, {"Statement": [deny]}], "elasticloadbalancing:ModifyListener", [LISTENER]), \
        "an explicit Deny in any policy wins"
    assert not iam.evaluate([{"Statement": [allow]}], "elasticloadbalancing:ModifyListener", [LISTENER.replace("/web/", "/Web/")]), \
        "resources are case-sensitive"
    assert iam.refused([{"Statement": [allow]}], "elasticloadbalancing:ModifyListener", [LISTENER, "arn:aws:x"]) \
        == ["arn:aws:x"], "every resource must be allowed; the refused one is named"
    not_action = {"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"}
    assert iam.evaluate([{"Statement": [not_action]}], "states:StartExecution", ["arn:aws:states:x"])
    assert not iam.evaluate([{"Statement": [not_action]}], "iam:PassRole", ["*"])
    assert not iam.evaluate([], "states:StartExecution", ["*"]), "nothing allows: refused"
    with pytest.raises(iam.NotModelled, match="condition key aws:RequestedRegion"):
        iam.evaluate([{"Statement": [{**allow, "Condition": {"StringEquals": {"aws:RequestedRegion": "us-east-1"}}}]}],
                     "elasticloadbalancing:ModifyListener", [LISTENER])
    with pytest.raises(iam.NotModelled, match="operator ArnLike"):
        iam.evaluate([{"Statement": [{**allow, "Condition": {"ArnLike": {"aws:RequestTag/a": "arn:*"}}}]}],
                     "elasticloadbalancing:ModifyListener", [LISTENER])


RULE = f"arn:aws:elasticloadbalancing:us-east-1:{ACCOUNT}:listener-rule/app/web/abc/def/1a2b"
EXECUTIONS = f"arn:aws:states:us-east-1:{ACCOUNT}:execution:cc-rollout:*"


def test_tag_conditions_hold_as_iam_holds_them():
    """The test-traffic stage's grants: CreateRule only with the tag of an execution of the stack's
    state machine, DeleteRule only of a rule that carries one."""
    create = {"Effect": "Allow", "Action": "elasticloadbalancing:CreateRule", "Resource": "*",
              "Condition": {"StringLike": {"aws:RequestTag/cluster-canary:execution": EXECUTIONS}}}
    ours = iam.Context(request_tags={"cluster-canary:execution": EXECUTIONS.replace("*", "rollout-1")})
    theirs = iam.Context(request_tags={"cluster-canary:execution": "arn:aws:states:us-east-1:1:execution:other:x"})
    assert iam.evaluate([{"Statement": [create]}], "elasticloadbalancing:CreateRule", [LISTENER], ours)
    assert not iam.evaluate([{"Statement": [create]}], "elasticloadbalancing:CreateRule", [LISTENER], theirs)
    assert not iam.evaluate([{"Statement": [create]}], "elasticloadbalancing:CreateRule", [LISTENER]), \
        "no such tag on the request: the condition is false"
    delete = {"Effect": "Allow", "Action": "elasticloadbalancing:DeleteRule", "Resource": "*",
              "Condition": {"StringLike": {"aws:ResourceTag/cluster-canary:execution": [EXECUTIONS, "x"]},
                            "StringEquals": {"aws:ResourceTag/team": "web"}}}
    tags = {RULE: {"cluster-canary:execution": EXECUTIONS.replace("*", "r"), "team": "web"}}
    read = iam.Context(resource_tags=lambda arn: tags.get(arn, {}))
    assert iam.evaluate([{"Statement": [delete]}], "elasticloadbalancing:DeleteRule", [RULE], read)
    assert not iam.evaluate([{"Statement": [delete]}], "elasticloadbalancing:DeleteRule", [RULE + "x"], read), \
        "an untagged rule"
    tags[RULE]["team"] = "payments"
    assert not iam.evaluate([{"Statement": [delete]}], "elasticloadbalancing:DeleteRule", [RULE], read), \
        "every key of every operator must hold"


def test_a_requests_tags_are_read_from_its_form():
    body = ("Action=CreateRule&Version=2015-12-01&Priority=1&Tags.member.1.Key=cluster-canary%3Aexecution"
            "&Tags.member.1.Value=arn%3Aaws%3Astates%3Ax&Tags.member.2.Key=team&Tags.member.2.Value=web"
            "&Conditions.member.1.QueryStringConfig.Values.member.1.Key=k"
            "&Conditions.member.1.QueryStringConfig.Values.member.1.Value=v").encode()
    request = iam.Request("POST", "/", {}, body)
    assert iam.request_tags(request) == {"cluster-canary:execution": "arn:aws:states:x", "team": "web"}, \
        "a query pair's Key and Value are not tags"


def test_an_operation_no_model_has_is_said_not_guessed():
    with pytest.raises(iam.NotModelled, match="answers GET /workspaces/ws-1/api/v1/query"):
        asks("GET", "/workspaces/ws-1/api/v1/query", "aps")


@pytest.mark.parametrize("service, operation, code", [
    ("elbv2", "ModifyListener", "AccessDenied"),
    ("route53", "ChangeResourceRecordSets", "AccessDenied"),
    ("cloudwatch", "DescribeAlarms", "AccessDenied"),
    ("stepfunctions", "StartExecution", "AccessDeniedException"),
    ("eks", "DescribeCluster", "AccessDeniedException"),
    ("lambda", "Invoke", "AccessDeniedException"),
    ("globalaccelerator", "UpdateEndpointGroup", "AccessDeniedException"),
])
def test_a_refusal_reads_as_awss_to_the_sdks_parsers(service, operation, code):
    model = botocore.session.get_session().get_service_model(service)
    status, headers, body = iam.access_denied(model, "arn:aws:sts::1:assumed-role/r/s", "x:Y", "arn:aws:x")
    parsed = create_parser(model.metadata["protocol"]).parse(
        {"status_code": status, "headers": dict(headers), "body": body}, model.operation_model(operation).output_shape)
    assert parsed["Error"]["Code"] == code
    assert "is not authorized to perform: x:Y on resource: arn:aws:x" in parsed["Error"]["Message"]

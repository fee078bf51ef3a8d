"""The IAM policy linter (parliament, from PyPI, with the IAM service authorization data it
ships) over every inline policy of the stack's roles, as the stack holds them once created
(intrinsic functions resolved), for deployments that take each conditional statement. What it
finds must be explained in template.yaml's `Metadata.PolicyLinterExplained`, and every
explanation must still match a finding."""
import json
import subprocess
import sys

import boto3
import pytest
import yaml
from parliament import analyze_policy_string

from sandbox import stack as stack_mod
from sandbox.harness import REPO

ACCOUNT = "123456789012"
# Two deployments between them take every branch of the template's conditions.
DEPLOYMENTS = {
    "secret, every provider, other accounts, paging": {
        "ManagementAccess": "secret",
        "ManagementSecretArn": f"arn:aws:secretsmanager:us-east-1:{ACCOUNT}:secret:argocd-hub-AbCdEf",
        "DatadogSecretArn": f"arn:aws:secretsmanager:us-east-1:{ACCOUNT}:secret:datadog-keys-AbCdEf",
        "PrometheusWorkspaceArns": f"arn:aws:aps:us-east-1:{ACCOUNT}:workspace/ws-0123",
        "ClusterAccountRoleName": "cluster-canary-cluster-reader",
        "AlarmTopicArn": f"arn:aws:sns:us-east-1:{ACCOUNT}:platform-pager",
    },
    "eks, nothing optional": {"ManagementAccess": "eks", "ManagementClusterName": "hub"},
}


class _Template(yaml.SafeLoader):
    """template.yaml as data: CloudFormation's short-form tags read as their argument."""


_Template.add_multi_constructor("!", lambda loader, suffix, node: None)


def explained():
    template = yaml.load((REPO / "template.yaml").read_text(), Loader=_Template)
    return template["Metadata"]["PolicyLinterExplained"]


def findings(parameters):
    """(role's logical id, policy name, issue, actions it names) of every finding."""
    moto = subprocess.Popen([sys.executable, str(REPO / "tests/moto/moto_server.py"), "-H", "127.0.0.1", "-p", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        endpoint = json.loads(moto.stdout.readline())["endpoint"]

        def client(service):
            return boto3.client(service, endpoint_url=endpoint, region_name="us-east-1",
                                aws_access_key_id="test", aws_secret_access_key="test")

        stack = stack_mod.deploy(client, REPO, REPO / "template.yaml", parameters, "us-east-1")
        iam = client("iam")
        found = []
        for logical, resource in stack.template["Resources"].items():
            if resource["Type"] != "AWS::IAM::Role":
                continue
            role = stack.resources[logical]
            for name in iam.list_role_policies(RoleName=role)["PolicyNames"]:
                document = iam.get_role_policy(RoleName=role, PolicyName=name)["PolicyDocument"]
                for finding in analyze_policy_string(json.dumps(document)).findings:
                    detail = finding.detail if isinstance(finding.detail, list) else [finding.detail]
                    actions = sorted({d["action"] if isinstance(d, dict) else d for d in detail if d})
                    found.append((logical, name, finding.issue, actions))
        return found
    finally:
        moto.kill()
        moto.wait()


def explanation_of(finding, explanations):
    role, policy, issue, actions = finding
    for index, entry in enumerate(explanations):
        if (entry["Role"], entry["Issue"]) == (role, issue) and entry.get("Policy", policy) == policy \
                and set(actions) <= set(entry.get("Actions", actions)):
            return index
    return None


@pytest.mark.parametrize("deployment", DEPLOYMENTS)
def test_every_finding_of_the_policy_linter_is_explained(deployment):
    explanations = explained()
    found = findings(DEPLOYMENTS[deployment])
    unexplained = [f for f in found if explanation_of(f, explanations) is None]
    assert unexplained == [], f"findings without an explanation in template.yaml: {unexplained}"


def test_every_explanation_still_matches_a_finding():
    explanations = explained()
    used = {explanation_of(f, explanations) for parameters in DEPLOYMENTS.values() for f in findings(parameters)}
    stale = [entry for index, entry in enumerate(explanations) if index not in used]
    assert stale == [], f"explanations in template.yaml that match no finding: {stale}"

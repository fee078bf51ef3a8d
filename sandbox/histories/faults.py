"""The faults a history plays through the sandbox's front door: which requests they match, and
the answers and IAM policies they put in the way."""

import json
import threading
import time

from ..front_door import INVOKE, route53_pending
from .stories import SHORT_TIMEOUT


def is_modify_listener(method, path, body):
    return b"Action=ModifyListener" in body


def is_endpoint_group_update(method, path, body):
    """Global Accelerator's UpdateEndpointGroup (JSON 1.1: the operation is in a header; only
    an update names a group with its endpoints or its dial)."""
    return bool(body) and b'"EndpointGroupArn"' in body and (
        b'"EndpointConfigurations"' in body or b'"TrafficDialPercentage"' in body)


def is_lattice_update(method, path, body):
    """VPC Lattice's UpdateListener or UpdateRule (REST-JSON: a PATCH of the listener or rule)."""
    return method == "PATCH" and path.startswith("/services/") and "/listeners/" in path


def is_cloudwatch(method, path, body):
    return "/service/GraniteServiceVersion20100801/operation/" in path


def is_traffic_write(method, path, body):
    return (is_modify_listener(method, path, body) or is_route53_change(method, path, body)
            or is_endpoint_group_update(method, path, body) or is_lattice_update(method, path, body))


def held_past_timeout():
    """A fault's predicate that holds the next traffic write past shift-weights' short Timeout,
    then lets it through (it never answers itself: the request is forwarded)."""
    left = [1]
    lock = threading.Lock()

    def predicate(method, path, body):
        if is_traffic_write(method, path, body):
            with lock:
                hold, left[0] = left[0] > 0, 0
            if hold:
                time.sleep(SHORT_TIMEOUT + 2)
        return False
    return predicate


def is_safety_net_try(sandbox, execution_arn):
    """A delivery of the SafetyNet rule for `execution_arn` (shift-weights' `safetyNet`)."""
    function = sandbox.function("shift-weights")

    def predicate(method, path, body):
        match = INVOKE.match(path)
        return (bool(match) and match.group(1).split(":")[-1] == function and b'"safetyNet"' in body
                and execution_arn.encode() in body)
    return predicate


def function_error():
    """An invocation that ran and failed (the function's error), as Lambda answers it."""
    return (200, [("Content-Type", "application/json"), ("X-Amz-Function-Error", "Unhandled")],
            json.dumps({"errorType": "Runtime.ExitError", "errorMessage": "history: the safety net crashed"}).encode())


def is_route53_change(method, path, body):
    return method == "POST" and "/2013-04-01/hostedzone/" in path and path.endswith("/rrset")


def pending_change(times):
    """GetChange answers PENDING `times` times (the change's id read from its path)."""
    def predicate(method, path, body):
        if not (method == "GET" and path.startswith("/2013-04-01/change/")):
            return False
        fault[2] = route53_pending(path.rsplit("/", 1)[-1])
        return True
    fault = [predicate, times, None]
    return fault


# What a denial of the functions' traffic writes (someone narrowed the role) says.
DENY_WRITES = {"Version": "2012-10-17", "Statement": [{
    "Effect": "Deny", "Action": ["elasticloadbalancing:ModifyListener", "route53:ChangeResourceRecordSets",
                                 "globalaccelerator:UpdateEndpointGroup", "vpc-lattice:UpdateListener",
                                 "vpc-lattice:UpdateRule"],
    "Resource": "*"}]}


DENY_POLICY = "history-denies-traffic-writes"


# ... and of the checks' reads.
DENY_READS = {"Version": "2012-10-17", "Statement": [{
    "Effect": "Deny", "Action": ["cloudwatch:DescribeAlarms", "cloudwatch:GetMetricData"], "Resource": "*"}]}


DENY_READS_POLICY = "history-denies-check-reads"


# ... and of the test-traffic stage's rule (a grant narrowed to another state machine's).
DENY_TEST_RULES = {"Version": "2012-10-17", "Statement": [{
    "Effect": "Deny", "Action": ["elasticloadbalancing:CreateRule"], "Resource": "*"}]}


DENY_TEST_RULES_POLICY = "history-denies-test-rules"

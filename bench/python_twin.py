"""The Python + boto3 twin of one function, for the cold-start comparison: it creates the same
AWS clients the Rust function's `main` creates, then runs the Lambda runtime loop and answers
the benchmark's event the way the Rust function does (the benchmark events need no AWS call).

    python bench/python_twin.py shift-weights|evaluate-alarms|register-cluster|cluster-created
"""
import json
import os
import sys
import urllib.request

import boto3

CLIENTS = {
    "shift-weights": ("elbv2", "route53", "stepfunctions"),
    "evaluate-alarms": ("cloudwatch",),
    "register-cluster": ("eks", "secretsmanager"),
    "cluster-created": ("stepfunctions", "eks", "secretsmanager"),
}


def handle(function, event):
    """What the Rust function answers to the benchmark's events."""
    if function == "cluster-created":
        tags = event["detail"]["responseElements"]["cluster"].get("tags", {})
        if "cluster-canary/profile" not in tags:
            name = event["detail"]["requestParameters"]["name"]
            return {"action": "skipped", "cluster": name,
                    "reason": "cluster is not opted in (no cluster-canary/profile tag)"}
    if function == "evaluate-alarms" and event.get("operation") == "evaluate" and "analysis" not in event["plan"]:
        return {"verdict": "pass", "rollback": False, "consecutiveFailures": 0, "passes": 1,
                "counts": {"pass": 0, "fail": 0, "inconclusive": 0, "ignored": 0},
                "reasons": ["no analysis configured: the step passes on time alone"],
                "summary": "no analysis configured: the step passes on time alone"}
    raise ValueError(f"invalid input: unknown operation {event.get('operation')!r}")


def main():
    function = sys.argv[1]
    clients = [boto3.client(name) for name in CLIENTS[function]]  # noqa: F841 (created at init, as in Rust)
    api = f"http://{os.environ['AWS_LAMBDA_RUNTIME_API']}/2018-06-01/runtime"
    while True:
        with urllib.request.urlopen(f"{api}/invocation/next") as response:
            request_id = response.headers["Lambda-Runtime-Aws-Request-Id"]
            event = json.load(response)
        try:
            body, path = json.dumps(handle(function, event)).encode(), f"{api}/invocation/{request_id}/response"
        except ValueError as e:
            body = json.dumps({"errorType": "InvalidInput", "errorMessage": str(e)}).encode()
            path = f"{api}/invocation/{request_id}/error"
        urllib.request.urlopen(urllib.request.Request(path, data=body, method="POST")).read()


if __name__ == "__main__":
    main()

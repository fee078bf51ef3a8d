"""Approves (or rejects) the step a rollout is waiting on, knowing only its execution ARN:

    python -m sandbox.approve [--endpoint URL] EXECUTION_ARN [--reject REASON] [--by NAME]

It does what the README's AWS CLI recipe does: read the task token from the execution's
history (the pending `WaitForApproval` task's parameters: the only place it is kept), then
`SendTaskSuccess` or `SendTaskFailure` (error `ApprovalRejected`). The token itself is never
printed. With `--endpoint` it talks to the sandbox; without, to AWS as the environment
configures.
"""
import argparse
import getpass
import json
import sys

import boto3

WAIT_RESOURCE = "invoke.waitForTaskToken"


def pending_token(sfn, execution_arn):
    """The task token of the approval the execution waits for now, or None."""
    if sfn.describe_execution(executionArn=execution_arn)["status"] != "RUNNING":
        return None
    token, page = None, {}
    while True:
        page = sfn.get_execution_history(executionArn=execution_arn, maxResults=1000,
                                         **({"nextToken": page["nextToken"]} if page.get("nextToken") else {}))
        for event in page["events"]:
            details = next((v for k, v in event.items() if k.endswith("EventDetails")), {})
            if details.get("resource") != WAIT_RESOURCE:
                continue
            if event["type"] == "TaskScheduled":
                payload = json.loads(details["parameters"])["Payload"]
                payload = json.loads(payload) if isinstance(payload, str) else payload
                if payload.get("operation") == "awaitApproval":
                    token = payload["taskToken"]
            elif event["type"] in ("TaskSucceeded", "TaskFailed", "TaskTimedOut", "TaskStartFailed", "TaskSubmitFailed"):
                token = None  # answered, timed out or never sent
        if not page.get("nextToken"):
            return token


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("execution_arn")
    parser.add_argument("--reject", metavar="REASON", help="reject the step (the rollout restores the baseline)")
    parser.add_argument("--by", default=getpass.getuser(), help="who answers (recorded in the execution)")
    parser.add_argument("--endpoint", help="AWS endpoint, e.g. the sandbox's")
    args = parser.parse_args(argv)
    region = args.execution_arn.split(":")[3] if args.execution_arn.count(":") >= 6 else None
    if region is None:
        print(f"{args.execution_arn!r} is not a Step Functions execution ARN", file=sys.stderr)
        return 2
    # The sandbox's emulator takes any credentials; AWS takes the environment's.
    dummy = {"aws_access_key_id": "test", "aws_secret_access_key": "test"} if args.endpoint else {}
    sfn = boto3.client("stepfunctions", endpoint_url=args.endpoint, region_name=region, **dummy)
    token = pending_token(sfn, args.execution_arn)
    if token is None:
        print(f"execution {args.execution_arn} is not waiting for an approval", file=sys.stderr)
        return 1
    if args.reject:
        sfn.send_task_failure(taskToken=token, error="ApprovalRejected", cause=f"rejected by {args.by}: {args.reject}")
        print(f"rejected: {args.execution_arn} restores the baseline")
    else:
        sfn.send_task_success(taskToken=token, output=json.dumps({"approvedBy": args.by}))
        print(f"approved: {args.execution_arn} goes on")
    return 0


if __name__ == "__main__":
    sys.exit(main())

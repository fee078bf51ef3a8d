"""Amazon CloudWatch Synthetics for the moto harness: canaries that are started, run and read,
which moto 5.2 has only in part (CreateCanary, GetCanary and DescribeCanaries, without runs,
StartCanary or StopCanary; a canary it does not have answered with a 500). Issue 70's test stage
judges a new cluster by the runs of the canaries a plan names.

Written from AWS's API reference (API version 2017-10-11) and botocore's service model of it,
which rest_json.py reads for every request (routes, required members, lengths, enums, ranges,
patterns: a canary's name `^[0-9a-z_\\-]+$`, 1-255 characters; GetCanaryRuns' `MaxResults` 1-100,
DescribeCanaries' 1-20 and its `Names` 1-5), answered as the service answers:
`ValidationException` (400), `ResourceNotFoundException` (404), `ConflictException` (409).

Modelled: CreateCanary (READY at once; a name taken is a ValidationException), GetCanary,
DescribeCanaries (`Names` filters, pages of `MaxResults`, default 20, with a `NextToken`),
StartCanary (from READY, STOPPED or ERROR to RUNNING; a RUNNING canary is a ConflictException),
StopCanary (from RUNNING to STOPPED; otherwise a ConflictException), GetCanaryRuns (newest first,
pages of `MaxResults`, default 100). A canary that does not exist is a ResourceNotFoundException,
GetCanary's too (botocore's model lists no error for it but validation; answered here as the
others answer it). The canary's `Status.State` and `Timeline` (`LastStarted`,
`LastStopped`) follow.

Runs: a canary runs only while RUNNING, and only the runs a test gives it: the harness's control
`POST /_harness/synthetics/<account>/<region>` with `{"runs": {"<canary>": ["PASSED", "FAILED",
{"state": "FAILED", "reason": "..."}]}}` sets (replaces) the canary's next runs. The next one
happens at the next read of that canary (GetCanary, DescribeCanaries naming it or listing it,
GetCanaryRuns) while it is RUNNING: one run a read, so that a poller sees each. No runs set is a
run that never comes. A canary whose schedule is `rate(0 minute)` (run once) stops itself after
its run, as the service stops it. A failed run's `StateReasonCode` is `CANARY_FAILURE`.

Not modelled: runs on the clock of the schedule (`rate(...)`, `cron(...)`), a canary's code, its
artifacts in S3 (`ArtifactS3Location` is given, nothing is written there), its CloudWatch metrics
(`SuccessPercent` in `CloudWatchSynthetics`), updates, deletions, tags' operations, dry runs,
groups, visual monitoring, retries, VPC configuration, the CREATING, STARTING and STOPPING states
the service passes through.
"""
import base64
import json
import uuid
from datetime import datetime, timezone

from rest_json import RestJsonApi, ServiceError

RUN_STATES = ("PASSED", "FAILED")


class Region:
    def __init__(self, account, name):
        self.account, self.name = account, name
        self.canaries = {}  # name -> canary, in the order of creation


def _now():
    return datetime.now(timezone.utc).timestamp()


def _invalid(message, _fields=(), _reason=None):
    return ServiceError("ValidationException", 400, message)


def _canary(region, name):
    found = region.canaries.get(name)
    if found is None:
        raise ServiceError("ResourceNotFoundException", 404, f"Canary {name} not found")
    return found


def _token(offset):
    return base64.urlsafe_b64encode(json.dumps({"offset": offset}).encode()).decode()


def _page(items, body, default):
    """A page of `items` from the request's NextToken, with the next token while more remain."""
    offset = 0
    if body.get("NextToken"):
        try:
            offset = int(json.loads(base64.urlsafe_b64decode(body["NextToken"].encode()))["offset"])
        except (ValueError, KeyError, TypeError):
            raise _invalid(f"The NextToken {body['NextToken']} is not valid") from None
    size = body.get("MaxResults") or default
    page = items[offset:offset + size]
    return page, (_token(offset + size) if offset + size < len(items) else None)


def _run_if_due(region, canary):
    """The canary's next run, if it is RUNNING and a test gave it one (the module's header)."""
    if canary["Status"]["State"] != "RUNNING" or not canary["_next_runs"]:
        return
    outcome = canary["_next_runs"].pop(0)
    state, reason = (outcome, None) if isinstance(outcome, str) else (outcome["state"], outcome.get("reason"))
    started = _now()
    status = {"State": state}
    if state == "FAILED":
        status.update(StateReason=reason or "Canary failed", StateReasonCode="CANARY_FAILURE")
    day = datetime.fromtimestamp(started, timezone.utc).strftime("%Y/%m/%d/%H-%M-%S")
    run_id = str(uuid.uuid4())
    canary["_runs"].insert(0, {
        "Id": run_id, "Name": canary["Name"], "Status": status,
        "Timeline": {"Started": started, "Completed": started},
        "ArtifactS3Location": f"{canary['ArtifactS3Location'].removeprefix('s3://')}/canary/{region.name}/"
                              f"{canary['Name']}/{day}-{run_id[:8]}",
    })
    if canary["Schedule"]["Expression"].replace(" ", "") in ("rate(0minute)", "rate(0minutes)"):
        _stopped(canary)


def _stopped(canary):
    canary["Status"] = {"State": "STOPPED"}
    canary["Timeline"]["LastStopped"] = _now()


def _view(canary):
    return {k: v for k, v in canary.items() if not k.startswith("_")}


def create_canary(region, body):
    name = body["Name"]
    if name in region.canaries:
        raise _invalid(f"Canary {name} already exists")
    now = _now()
    canary = {
        "Id": str(uuid.uuid4()), "Name": name, "Code": body["Code"],
        "ExecutionRoleArn": body["ExecutionRoleArn"], "Schedule": body["Schedule"],
        "RunConfig": body.get("RunConfig") or {"TimeoutInSeconds": 60},
        "SuccessRetentionPeriodInDays": body.get("SuccessRetentionPeriodInDays", 31),
        "FailureRetentionPeriodInDays": body.get("FailureRetentionPeriodInDays", 31),
        "Status": {"State": "READY"}, "Timeline": {"Created": now, "LastModified": now},
        "ArtifactS3Location": body["ArtifactS3Location"], "RuntimeVersion": body["RuntimeVersion"],
        "Tags": body.get("Tags") or {}, "_runs": [], "_next_runs": [],
    }
    region.canaries[name] = canary
    return 200, {"Canary": _view(canary)}


def get_canary(region, body):
    canary = _canary(region, body["Name"])
    _run_if_due(region, canary)
    return 200, {"Canary": _view(canary)}


def describe_canaries(region, body):
    names = body.get("Names")
    canaries = [c for name, c in region.canaries.items() if names is None or name in names]
    page, token = _page(canaries, body, 20)
    for canary in page:
        _run_if_due(region, canary)
    return 200, {"Canaries": [_view(c) for c in page], **({"NextToken": token} if token else {})}


def start_canary(region, body):
    canary = _canary(region, body["Name"])
    if canary["Status"]["State"] not in ("READY", "STOPPED", "ERROR"):
        raise ServiceError("ConflictException", 409,
                           f"Canary {canary['Name']} is {canary['Status']['State']}: it cannot be started")
    canary["Status"] = {"State": "RUNNING"}
    canary["Timeline"]["LastStarted"] = _now()
    return 200, {}


def stop_canary(region, body):
    canary = _canary(region, body["Name"])
    if canary["Status"]["State"] != "RUNNING":
        raise ServiceError("ConflictException", 409, f"Canary {canary['Name']} is {canary['Status']['State']}: "
                                                     "only a running canary can be stopped")
    _stopped(canary)
    return 200, {}


def get_canary_runs(region, body):
    canary = _canary(region, body["Name"])
    _run_if_due(region, canary)
    page, token = _page(canary["_runs"], body, 100)
    return 200, {"CanaryRuns": page, **({"NextToken": token} if token else {})}


OPERATIONS = {
    "CreateCanary": create_canary, "GetCanary": get_canary, "DescribeCanaries": describe_canaries,
    "StartCanary": start_canary, "StopCanary": stop_canary, "GetCanaryRuns": get_canary_runs,
}


def harness(region, body):
    """Sets the named canaries' next runs (the module's header); answers each canary's."""
    given = {name: (_canary(region, name), runs) for name, runs in (body.get("runs") or {}).items()}
    for run in (run for _, runs in given.values() for run in runs):
        state = run if isinstance(run, str) else (run or {}).get("state")
        if state not in RUN_STATES:
            raise _invalid(f"a run is {RUN_STATES[0]} or {RUN_STATES[1]} (or {{\"state\": ..., \"reason\": ...}}),"
                           f" not {run!r}")
    for canary, runs in given.values():
        canary["_next_runs"] = list(runs)
    return {"runs": {name: c["_next_runs"] for name, c in region.canaries.items()}}


API = RestJsonApi("synthetics", "synthetics", OPERATIONS, Region, harness, _invalid)
serves, serve = API.serves, API.serve

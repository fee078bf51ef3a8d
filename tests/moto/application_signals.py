"""CloudWatch Application Signals' SLOs for the moto harness (moto has no Application Signals).

Written from AWS's API reference (API version 2024-04-15) and botocore's service model of it,
which this module reads for every request's constraints (required members, lengths, enums, list
sizes: `SloIds` 1-50), answered as AWS's front end answers them (`ValidationException`, "1
validation error detected: ..."). REST-JSON, as the SDKs send it: a request signed for the
`application-signals` service is this module's; the account comes from the signing key (moto's
mapping of access keys to accounts), the Region from the credential scope.

Modelled: CreateServiceLevelObjective (`POST /slo`: a name taken in the account and Region is
ConflictException), GetServiceLevelObjective (`GET /slo/{Id}`, a name or an ARN),
ListServiceLevelObjectives (`POST /slos`, `MaxResults` and `NextToken`),
DeleteServiceLevelObjective (`DELETE /slo/{Id}`), and BatchGetServiceLevelObjectiveBudgetReport
(`POST /budget-report`): each report computed at the request's `Timestamp` from the SLO's SLI
metrics as they are in moto's CloudWatch (same account and Region), so a test changes a metric
with PutMetricData and the report follows:

- the interval: a rolling one ends at `Timestamp` and spans `Duration` units (MONTH: 30 days);
  a calendar one starts at the latest `StartTime + k × Duration` not after `Timestamp` (MONTH:
  calendar months). No `Interval`: rolling 7 days; no `AttainmentGoal`: 99; no
  `WarningThreshold`: 50 (percent of the budget left).
- request-based: requests and bad requests (or total − good) summed over the interval from each
  query's `MetricStat` (`Sum` or `SampleCount`; a `LATENCY` SLI's `MetricThreshold` and
  `ComparisonOperator` are required, kept and echoed, and do not change the counts); `Attainment` = good / total × 100;
  `TotalBudgetRequests` = floor(total × (100 − goal) / 100); `BudgetRequestsRemaining` =
  that − bad.
- period-based: the interval cut into `PeriodSeconds` periods (default 60); a period with
  datapoints is good when its statistic (`Sum`, `Average`, `Minimum`, `Maximum`, `SampleCount`)
  compares to `MetricThreshold` as `ComparisonOperator` says; `Attainment` = good / periods with
  data × 100; `TotalBudgetSeconds` = floor(interval seconds × (100 − goal) / 100);
  `BudgetSecondsRemaining` = that − bad periods × `PeriodSeconds`.
- `BudgetStatus`: INSUFFICIENT_DATA without a request (or a period with data), BREACHED when the
  attainment is under the goal, WARNING when less than `WarningThreshold` percent of the budget
  is left, else OK.
- an SLO a batch names that does not exist is in `Errors` (`ErrorCode` ResourceNotFoundException;
  AWS's exact code for it is not documented), not a failed call; a single Get of one is
  ResourceNotFoundException (404).

Not modelled: SLIs on Application Signals services (`KeyAttributes`, operations, dependencies,
composite SLIs: refused with ValidationException saying so), metric math (`Expression`) in SLI
queries (refused alike), periods without data (neither good nor bad here; AWS's treatment is not
in the API reference), exclusion windows, burn-rate configurations' effect (stored only),
UpdateServiceLevelObjective, tags, linked accounts, quotas, throttling.
"""
import calendar
import json
import math
import re
import threading
import time
import uuid
from datetime import datetime, timezone
from urllib.parse import parse_qs, unquote

import botocore.session

from global_accelerator import validation_message

MODEL = botocore.session.get_session().get_service_model("application-signals")
SIGNING_NAME = "application-signals"
_SCOPE = re.compile(r"Credential=([^/]+)/\d{8}/([^/]+)/([^/]+)/aws4_request")
UNIT_SECONDS = {"MINUTE": 60, "HOUR": 3_600, "DAY": 86_400, "MONTH": 30 * 86_400}
COMPARE = {"GreaterThanOrEqualTo": lambda v, t: v >= t, "GreaterThan": lambda v, t: v > t,
           "LessThan": lambda v, t: v < t, "LessThanOrEqualTo": lambda v, t: v <= t}
NOT_MODELLED = ("KeyAttributes", "OperationName", "DependencyConfig", "CompositeSliConfig", "MetricSource")

_lock = threading.RLock()
_slos = {}  # (account, region) -> {name: slo dict as GetServiceLevelObjective answers it}


class SignalsError(Exception):
    def __init__(self, code, message, status=400, **extra):
        super().__init__(message)
        self.code, self.message, self.status, self.extra = code, message, status, extra


def _not_found(reference):
    return SignalsError("ResourceNotFoundException", f"Slo with id {reference} not found", 404,
                        ResourceType="ServiceLevelObjective", ResourceId=reference)


def _validate(operation, body):
    message = validation_message(MODEL, operation, body)
    if message:
        raise SignalsError("ValidationException", message)


def _name_of(reference):
    """An SLO's name from a name or its ARN (`arn:aws:application-signals:<r>:<a>:slo/<name>`)."""
    return reference.split(":slo/", 1)[1] if reference.startswith("arn:") and ":slo/" in reference else reference


def _find(account, region, reference):
    slos = _slos.get((account, region), {})
    slo = slos.get(_name_of(reference))
    if slo is None or (reference.startswith("arn:") and slo["Arn"] != reference):
        raise _not_found(reference)
    return slo


def _check_queries(queries, path):
    for i, query in enumerate(queries or [], 1):
        if "MetricStat" not in query:
            raise SignalsError("ValidationException", f"{path}.{i}: the harness models SLI queries with a "
                                                      "MetricStat only (no Expression)")


def create(account, region, body):
    _validate("CreateServiceLevelObjective", body)
    name = body["Name"]
    sli, request_sli = body.get("SliConfig"), body.get("RequestBasedSliConfig")
    if (sli is None) == (request_sli is None):
        raise SignalsError("ValidationException", "Provide exactly one of SliConfig or RequestBasedSliConfig")
    now = time.time()
    slo = {"Arn": f"arn:aws:application-signals:{region}:{account}:slo/{name}", "Name": name,
           "CreatedTime": now, "LastUpdatedTime": now,
           "Goal": {"Interval": {"RollingInterval": {"DurationUnit": "DAY", "Duration": 7}},
                    "AttainmentGoal": 99.0, "WarningThreshold": 50.0, **(body.get("Goal") or {})},
           "MetricSourceType": "CloudWatchMetric"}
    if body.get("Description"):
        slo["Description"] = body["Description"]
    if body.get("BurnRateConfigurations"):
        slo["BurnRateConfigurations"] = body["BurnRateConfigurations"]
    if sli is not None:
        metric = sli["SliMetricConfig"]
        if any(k in metric for k in NOT_MODELLED) or "MetricDataQueries" not in metric:
            raise SignalsError("ValidationException", "the harness models SLIs on CloudWatch metrics "
                                                      "(SliMetricConfig.MetricDataQueries) only")
        if "MetricThreshold" not in sli or "ComparisonOperator" not in sli:
            raise SignalsError("ValidationException", "A period-based SLI needs MetricThreshold and ComparisonOperator")
        _check_queries(metric["MetricDataQueries"], "SliConfig.SliMetricConfig.MetricDataQueries")
        slo["EvaluationType"] = "PeriodBased"
        slo["Sli"] = {"SliMetric": {"MetricType": metric.get("MetricType", "AVAILABILITY"),
                                    "MetricDataQueries": metric["MetricDataQueries"]},
                      "MetricThreshold": sli["MetricThreshold"], "ComparisonOperator": sli["ComparisonOperator"]}
        slo["_period"] = metric.get("PeriodSeconds", 60)
    else:
        metric = request_sli["RequestBasedSliMetricConfig"]
        monitored = metric.get("MonitoredRequestCountMetric") or {}
        if any(k in metric for k in NOT_MODELLED) or "TotalRequestCountMetric" not in metric \
                or len(monitored) != 1:
            raise SignalsError("ValidationException", "the harness models request-based SLIs on CloudWatch "
                                                      "metrics (TotalRequestCountMetric and one of GoodCountMetric "
                                                      "or BadCountMetric) only")
        _check_queries(metric["TotalRequestCountMetric"], "TotalRequestCountMetric")
        _check_queries(next(iter(monitored.values())), "MonitoredRequestCountMetric")
        metric_type = metric.get("MetricType", "AVAILABILITY")
        # The API reference: MetricThreshold and ComparisonOperator are "required if this SLO is
        # tracking the Latency metric"; the report echoes them.
        threshold = {k: request_sli[k] for k in ("MetricThreshold", "ComparisonOperator") if k in request_sli}
        if metric_type == "LATENCY" and len(threshold) != 2:
            raise SignalsError("ValidationException", "A request-based SLI tracking the Latency metric needs "
                                                      "MetricThreshold and ComparisonOperator")
        slo["EvaluationType"] = "RequestBased"
        slo["RequestBasedSli"] = {"RequestBasedSliMetric": {
            "MetricType": metric_type,
            "TotalRequestCountMetric": metric["TotalRequestCountMetric"], "MonitoredRequestCountMetric": monitored},
            **threshold}
    with _lock:
        slos = _slos.setdefault((account, region), {})
        if name in slos:
            raise SignalsError("ConflictException", f"Slo with name {name} already exists", 409)
        slos[name] = slo
    return {"Slo": _view(slo)}


def _view(slo):
    return {k: v for k, v in slo.items() if not k.startswith("_")}


def _interval(goal, at):
    """(start, end) epoch seconds of the SLO's interval that holds `at`."""
    interval = goal.get("Interval") or {}
    if "CalendarInterval" in interval:
        c = interval["CalendarInterval"]
        start = c["StartTime"]
        if c["DurationUnit"] == "MONTH":
            begin = datetime.fromtimestamp(start, timezone.utc)
            months = lambda d: d.year * 12 + d.month - 1  # noqa: E731
            passed = (months(datetime.fromtimestamp(at, timezone.utc)) - months(begin)) // c["Duration"] * c["Duration"]
            index = months(begin) + passed
            year, month = divmod(index, 12)
            day = min(begin.day, calendar.monthrange(year, month + 1)[1])
            return begin.replace(year=year, month=month + 1, day=day).timestamp(), at
        length = UNIT_SECONDS[c["DurationUnit"]] * c["Duration"]
        return start + math.floor((at - start) / length) * length, at
    rolling = interval.get("RollingInterval") or {"DurationUnit": "DAY", "Duration": 7}
    return at - UNIT_SECONDS[rolling["DurationUnit"]] * rolling["Duration"], at


def _epoch(ts):
    return (ts if ts.tzinfo else ts.replace(tzinfo=timezone.utc)).timestamp()


def _datapoints(account, region, stat_query, start, end):
    """The datapoints of a MetricStat's metric (its namespace, name and exact dimensions) in
    [start, end), as (epoch seconds, sum, count, min, max)."""
    from moto.cloudwatch.models import MetricAggregatedDatum, cloudwatch_backends

    metric = stat_query["MetricStat"]["Metric"]
    wanted = sorted((d["Name"], d["Value"]) for d in metric.get("Dimensions", []))
    found = []
    for datum in cloudwatch_backends[account][region].get_all_metrics():
        if datum.namespace != metric["Namespace"] or datum.name != metric["MetricName"]:
            continue
        if sorted((d.name, d.value) for d in datum.dimensions) != wanted:
            continue
        at = _epoch(datum.timestamp)
        if not start <= at < end:
            continue
        if isinstance(datum, MetricAggregatedDatum):
            found.append((at, datum.sum, datum.sample_count, datum.min, datum.max))
        else:
            value = float(datum.value)
            found.append((at, value, 1, value, value))
    return found


def _statistic(points, stat):
    if stat == "Sum":
        return sum(p[1] for p in points)
    if stat == "SampleCount":
        return sum(p[2] for p in points)
    if stat == "Average":
        return sum(p[1] for p in points) / sum(p[2] for p in points)
    if stat == "Minimum":
        return min(p[3] for p in points)
    if stat == "Maximum":
        return max(p[4] for p in points)
    raise SignalsError("ValidationException", f"the harness models the statistics Sum, SampleCount, Average, "
                                              f"Minimum and Maximum, not {stat}")


def _returned(queries):
    """The query whose values the SLI takes: the one with ReturnData (or the only one)."""
    returned = [q for q in queries if q.get("ReturnData", True)]
    return returned[0] if returned else queries[0]


def _total(account, region, queries, start, end):
    query = _returned(queries)
    points = _datapoints(account, region, query, start, end)
    return _statistic(points, query["MetricStat"]["Stat"]) if points else 0.0


def report(account, region, slo, at):
    goal = slo["Goal"]
    target = float(goal.get("AttainmentGoal", 99.0))
    warning = float(goal.get("WarningThreshold", 50.0))
    start, end = _interval(goal, at)
    answer = {"Arn": slo["Arn"], "Name": slo["Name"], "EvaluationType": slo["EvaluationType"], "Goal": goal}
    if slo["EvaluationType"] == "RequestBased":
        answer["RequestBasedSli"] = slo["RequestBasedSli"]
        metric = slo["RequestBasedSli"]["RequestBasedSliMetric"]
        total = _total(account, region, metric["TotalRequestCountMetric"], start, end)
        (kind, queries), = metric["MonitoredRequestCountMetric"].items()
        monitored = _total(account, region, queries, start, end)
        bad = monitored if kind == "BadCountMetric" else max(total - monitored, 0.0)
        if total <= 0:
            return {**answer, "BudgetStatus": "INSUFFICIENT_DATA"}
        budget = math.floor(total * (100.0 - target) / 100.0)
        attainment, remaining, unit = (total - bad) / total * 100.0, budget - int(bad), "Requests"
    else:
        answer["Sli"] = slo["Sli"]
        query = _returned(slo["Sli"]["SliMetric"]["MetricDataQueries"])
        period = slo["_period"]
        points = _datapoints(account, region, query, start, end)
        buckets = {}
        for point in points:
            buckets.setdefault(math.floor((point[0] - start) / period), []).append(point)
        compare = COMPARE[slo["Sli"]["ComparisonOperator"]]
        good = sum(1 for p in buckets.values()
                   if compare(_statistic(p, query["MetricStat"]["Stat"]), slo["Sli"]["MetricThreshold"]))
        if not buckets:
            return {**answer, "BudgetStatus": "INSUFFICIENT_DATA"}
        budget = math.floor((end - start) * (100.0 - target) / 100.0)
        attainment, unit = good / len(buckets) * 100.0, "Seconds"
        remaining = budget - (len(buckets) - good) * period
    status = "BREACHED" if attainment < target else \
        "WARNING" if budget > 0 and remaining * 100.0 / budget < warning else "OK"
    return {**answer, "BudgetStatus": status, "Attainment": attainment,
            f"TotalBudget{unit}": budget, f"Budget{unit}Remaining": remaining}


def budget_report(account, region, body):
    _validate("BatchGetServiceLevelObjectiveBudgetReport", body)
    at = float(body["Timestamp"])
    reports, errors = [], []
    for reference in body["SloIds"]:
        try:
            slo = _find(account, region, reference)
        except SignalsError as e:
            name = _name_of(reference)
            errors.append({"Name": name, "Arn": reference if reference.startswith("arn:") else
                           f"arn:aws:application-signals:{region}:{account}:slo/{name}",
                           "ErrorCode": e.code, "ErrorMessage": e.message})
            continue
        reports.append(report(account, region, slo, at))
    return {"Timestamp": at, "Reports": reports, "Errors": errors}


def list_slos(account, region, query):
    limit = int(query.get("MaxResults", ["50"])[0])
    if not 1 <= limit <= 50:
        raise SignalsError("ValidationException", f"1 validation error detected: Value '{limit}' at 'maxResults' "
                                                  "failed to satisfy constraint: Member must have value less than "
                                                  "or equal to 50")
    names = sorted(_slos.get((account, region), {}))
    begin = int(query.get("NextToken", ["0"])[0] or 0)
    page = names[begin:begin + limit]
    slos = _slos.get((account, region), {})
    answer = {"SloSummaries": [{k: slos[n][k] for k in ("Arn", "Name", "CreatedTime", "EvaluationType",
                                                         "MetricSourceType")} for n in page]}
    if begin + limit < len(names):
        answer["NextToken"] = str(begin + limit)
    return answer


def handle(account, region, method, path, query, body):
    if method == "POST" and path == "/slo":
        return create(account, region, body)
    if method == "POST" and path == "/budget-report":
        return budget_report(account, region, body)
    if method == "POST" and path == "/slos":
        return list_slos(account, region, query)
    if path.startswith("/slo/") and method in ("GET", "DELETE"):
        reference = unquote(path[len("/slo/"):])
        with _lock:
            slo = _find(account, region, reference)
            if method == "DELETE":
                del _slos[(account, region)][slo["Name"]]
                return {}
        return {"Slo": _view(slo)}
    raise SignalsError("UnknownOperationException", f"the harness does not model {method} {path}", 404)


def serves(environ):
    scope = _SCOPE.search(environ.get("HTTP_AUTHORIZATION", ""))
    return bool(scope) and scope.group(3) == SIGNING_NAME


def serve(environ, start_response):
    """One request of the Application Signals API."""
    from moto.iam.models import get_account_id_from

    scope = _SCOPE.search(environ["HTTP_AUTHORIZATION"])
    account, region = get_account_id_from(scope.group(1)), scope.group(2)
    length = int(environ.get("CONTENT_LENGTH") or 0)
    raw = environ["wsgi.input"].read(length) or b"{}"
    # The raw path: an ARN in `/slo/{Id}` is percent-encoded, slashes included.
    path = (environ.get("RAW_URI") or environ.get("REQUEST_URI") or environ.get("PATH_INFO", "")).split("?", 1)[0]
    try:
        body = json.loads(raw)
        answer, status, code = handle(account, region, environ["REQUEST_METHOD"], path,
                                      parse_qs(environ.get("QUERY_STRING", "")), body), 200, None
    except ValueError:
        answer, status, code = {"message": "not JSON"}, 400, "SerializationException"
    except SignalsError as e:
        key = "message" if e.code == "ValidationException" else "Message"
        answer, status, code = {key: e.message, **e.extra}, e.status, e.code
    text = json.dumps(answer).encode()
    headers = [("Content-Type", "application/json"), ("Content-Length", str(len(text))),
               ("x-amzn-RequestId", str(uuid.uuid4()))]
    if code:
        headers.append(("x-amzn-ErrorType", code))
    start_response(f"{status} {'OK' if status == 200 else 'Error'}", headers)
    return [text]

"""The sandbox's service-level objective: `web-availability`, a request-based Application Signals
SLO (the moto harness emulates the service, tests/moto/application_signals.py) of 99 % over the
last hour, on the `Shop` namespace's `Requests` and `Errors` of the checkout service. Its
budget report is computed from those metrics as they are in moto's CloudWatch: `served` moves it."""
from datetime import datetime, timedelta, timezone

SLO = "web-availability"
DIMENSIONS = [{"Name": "Service", "Value": "checkout"}]


def query(metric):
    return [{"Id": metric.lower(), "MetricStat": {"Metric": {"Namespace": "Shop", "MetricName": metric,
                                                             "Dimensions": DIMENSIONS}, "Period": 60, "Stat": "Sum"}}]


def create_slo(sandbox, name=SLO, latency_ms=None):
    """`latency_ms`: a latency SLO instead, a request being good under that many milliseconds
    (its bad count is still `Errors`: the budget report reads the counts, not the threshold)."""
    sli = {"RequestBasedSliMetricConfig": {"TotalRequestCountMetric": query("Requests"),
                                           "MonitoredRequestCountMetric": {"BadCountMetric": query("Errors")}}}
    if latency_ms is not None:
        sli["RequestBasedSliMetricConfig"]["MetricType"] = "LATENCY"
        sli.update(MetricThreshold=latency_ms, ComparisonOperator="LessThan")
    sandbox.client("application-signals").create_service_level_objective(
        Name=name, Goal={"Interval": {"RollingInterval": {"DurationUnit": "HOUR", "Duration": 1}},
                         "AttainmentGoal": 99.0},
        RequestBasedSliConfig=sli)


def served(sandbox, requests, errors):
    """The checkout service's requests and errors, a few seconds ago."""
    at = datetime.now(timezone.utc) - timedelta(seconds=5)
    sandbox.client("cloudwatch").put_metric_data(Namespace="Shop", MetricData=[
        {"MetricName": "Requests", "Dimensions": DIMENSIONS, "Value": requests, "Timestamp": at},
        {"MetricName": "Errors", "Dimensions": DIMENSIONS, "Value": errors, "Timestamp": at}])

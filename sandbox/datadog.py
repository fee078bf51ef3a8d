"""The sandbox's Datadog: the API test double the sandbox starts (sandbox/harness.py), whose
values the `datadog` scenario sets — the canary's and the stable cluster's APM error counts."""
import json
import urllib.request

METRIC = "trace.http.request.errors"


def set_errors(sandbox, cluster, count):
    """What Datadog answers for `cluster`'s error count from now on (None: no data)."""
    post(sandbox, "/_test/values", {f"{METRIC}{{kube_cluster_name:{cluster}}}": count})


def outage(sandbox, answer=None, seconds=30):
    """Datadog's query endpoint from now on: `error` answers 503, `slow` answers after
    `seconds`, None answers again."""
    post(sandbox, "/_test/outage", {"answer": answer, "seconds": seconds} if answer else {})


def post(sandbox, path, document):
    request = urllib.request.Request(f"{sandbox.datadog_url}{path}", data=json.dumps(document).encode(),
                                     method="POST")
    urllib.request.urlopen(request, timeout=10).read()


def analysis(max_errors=25):
    """A plan's `analysis` that judges the canary by its error count in Datadog."""
    return {
        "datadog": {
            "site": "datadoghq.com",
            "checks": [
                {
                    "name": "canary errors",
                    "query": f"sum:{METRIC}{{kube_cluster_name:{{{{cluster}}}}}}.as_count()",
                    "aggregator": "sum",
                    "lookbackSeconds": 300,
                    "max": max_errors,
                }
            ],
        },
        "failureLimit": 1,
    }

"""A Datadog API test double: the v2 scalar and timeseries query endpoints (`POST
/api/v2/query/scalar`, `POST /api/v2/query/timeseries`), as Datadog's API reference describes
them, on a free loopback port. It prints one JSON line, {"url": ...}, once it listens.

It refuses what Datadog refuses:
- a missing or wrong `DD-API-KEY` or `DD-APPLICATION-KEY`: 403 {"errors": ["Forbidden"]};
- a body that is not a scalar request (`data.type` "scalar_request", integer `from` < `to` in
  milliseconds, `queries` of `data_source` "metrics" with a `name`, a `query` and an
  `aggregator` of avg/min/max/sum/last/percentile/mean/l2norm/area) or a timeseries request
  (`data.type` "timeseries_request", the same `from`/`to`, an integer `interval` of at least
  1,000 ms if given, `queries` as above without an aggregator): 400 {"errors": [...]};
- a metrics query that is not `<space aggregation>:<metric>{<tags>}` with an optional
  `.as_count()`/`.as_rate()`/`.fill(...)` and `by {<tags>}`: 400 "Error parsing query";
- more than `--rate-limit` requests in a `--rate-period` window: 429 {"errors": ["Too many
  requests"]} with `X-RateLimit-Limit`, `-Period`, `-Remaining`, `-Reset` (seconds until the
  window ends) and `-Name`, the headers Datadog sends (on every answer);
- any other path: 404 {"errors": ["Not found"]}.

Answers: the value given for `<metric>{<tags>}` (`--values` JSON, or `POST /_test/values`) as
one `number` column named after the query; a `by {…}` query answers every value of that
metric with a `group` column; a series with no value (`null` given to `/_test/values` removes
one) answers an empty `values` list. A timeseries query answers `times` from `from` to `to`,
one per `interval` (default 60,000 ms), and one series per matching metric (several for a
`by {…}`), its points the value given, or, for a list, its items in turn (so a test gives a
series its spread). `POST /_test/outage` plays an outage of the query
endpoint: `{"answer": "error"}` answers 503 {"errors": ["Service Unavailable"]},
`{"answer": "slow", "seconds": S}` answers after S seconds, `{}` ends it.
`GET /_test/requests` says how many requests came and how many were rate limited.

Not modelled: the query language beyond that shape (functions, arithmetic, formulas: a
timeseries answer is its first query's), other data sources, units, time aggregation over
`from`/`to` (a scalar answer is the value given; a list's first item), and
Datadog's per-organisation limits (the rate limit is the one this double is started with).
"""
import argparse
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

AGGREGATORS = {"avg", "min", "max", "sum", "last", "percentile", "mean", "l2norm", "area"}
QUERY = re.compile(
    r"^(avg|sum|min|max):([A-Za-z0-9_.]+)\{([^{}]*)\}"
    r"((?:\.as_count\(\)|\.as_rate\(\)|\.fill\((?:zero|null|last|linear)\))*)"
    r"(?: by \{([^{}]*)\})?$"
)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--api-key", required=True)
    parser.add_argument("--app-key", required=True)
    parser.add_argument("--values", default="{}", help='JSON: {"metric{tags}": value}')
    parser.add_argument("--rate-limit", type=int, default=1000)
    parser.add_argument("--rate-period", type=int, default=10)
    args = parser.parse_args()
    state = {"values": json.loads(args.values), "outage": {}, "requests": 0, "limited": 0, "window": (time.time(), 0)}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        disable_nagle_algorithm = True  # no 40 ms wait per answer (sandbox/front_door.py)
        protocol_version = "HTTP/1.1"

        def answer(self, status, document, headers=None):
            body = json.dumps(document).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

        def do_GET(self):
            if self.path == "/_test/requests":
                with lock:
                    return self.answer(200, {"requests": state["requests"], "limited": state["limited"]})
            self.answer(404, {"errors": ["Not found"]})

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if self.path == "/_test/values":
                with lock:
                    for key, value in json.loads(raw).items():
                        if value is None:
                            state["values"].pop(key, None)  # the series has no value from now on
                        else:
                            state["values"][key] = value
                return self.answer(200, {"values": state["values"]})
            if self.path == "/_test/outage":
                with lock:
                    state["outage"] = json.loads(raw)
                return self.answer(200, state["outage"])
            kinds = {"/api/v2/query/scalar": "scalar", "/api/v2/query/timeseries": "timeseries"}
            kind = kinds.get(self.path)
            if kind is None:
                return self.answer(404, {"errors": ["Not found"]})
            with lock:
                outage = dict(state["outage"])
            if outage.get("answer") == "slow":
                time.sleep(outage.get("seconds", 30))  # then answers as usual, too late for a caller
            elif outage.get("answer") == "error":
                return self.answer(503, {"errors": ["Service Unavailable"]})
            with lock:
                state["requests"] += 1
                start, count = state["window"]
                now = time.time()
                if now - start >= args.rate_period:
                    start, count = now, 0
                count += 1
                state["window"] = (start, count)
                remaining = max(args.rate_limit - count, 0)
                reset = max(int(start + args.rate_period - now + 0.999), 1)
                limited = count > args.rate_limit
                if limited:
                    state["limited"] += 1
            rate = {
                "X-RateLimit-Limit": str(args.rate_limit),
                "X-RateLimit-Period": str(args.rate_period),
                "X-RateLimit-Remaining": str(remaining),
                "X-RateLimit-Reset": str(reset),
                "X-RateLimit-Name": f"query_{kind}_public",
            }
            if self.headers.get("DD-API-KEY") != args.api_key or self.headers.get("DD-APPLICATION-KEY") != args.app_key:
                return self.answer(403, {"errors": ["Forbidden"]})
            if limited:
                return self.answer(429, {"errors": ["Too many requests"]}, rate)
            try:
                request = json.loads(raw)
                attributes = request["data"]["attributes"]
                assert request["data"]["type"] == f"{kind}_request", f"data.type must be {kind}_request"
                start_ms, end_ms = attributes["from"], attributes["to"]
                assert isinstance(start_ms, int) and isinstance(end_ms, int), "from and to must be integers (ms)"
                assert start_ms < end_ms, "from must be before to"
                interval = attributes.get("interval", 60_000)
                assert isinstance(interval, int) and interval >= 1000, "interval must be an integer of at least 1000 (ms)"
                queries = attributes["queries"]
                assert isinstance(queries, list) and queries, "queries must be a non-empty list"
                for q in queries:
                    assert q.get("data_source") == "metrics", "data_source must be metrics"
                    assert isinstance(q.get("name"), str) and isinstance(q.get("query"), str), "name and query are strings"
                    if kind == "scalar":
                        assert q.get("aggregator") in AGGREGATORS, f"unknown aggregator {q.get('aggregator')!r}"
            except (ValueError, KeyError, TypeError, AssertionError) as e:
                return self.answer(400, {"errors": [f"Invalid request: {e}"]}, rate)
            columns, matched = [], []
            for q in queries:
                m = QUERY.match(q["query"].strip())
                if not m:
                    return self.answer(400, {"errors": [f"Error parsing query: {q['query']}"]}, rate)
                metric, tags, grouped = m.group(2), m.group(3), m.group(5)
                with lock:
                    values = dict(state["values"])
                if grouped is not None:
                    matching = {k: v for k, v in sorted(values.items()) if k.startswith(metric + "{")}
                    columns.append({"name": q["name"], "type": "group",
                                    "values": [[k[len(metric) + 1:-1]] for k in matching]})
                else:
                    key = f"{metric}{{{tags}}}"
                    matching = {key: values[key]} if key in values else {}
                matched.append(matching)
                numbers = [v[0] if isinstance(v, list) else v for v in matching.values()]
                columns.append({"name": q["name"], "type": "number", "values": numbers, "meta": {"unit": None}})
            if kind == "scalar":
                return self.answer(200, {"data": {"id": "0", "type": "scalar_response",
                                                  "attributes": {"columns": columns}}}, rate)
            times = list(range(start_ms, end_ms, interval))[:10_000]
            series, points = [], []
            for key, value in matched[0].items():
                items = value if isinstance(value, list) else [value]
                series.append({"group_tags": [key[key.index("{") + 1:-1]], "query_index": 0, "unit": None})
                points.append([items[i % len(items)] for i in range(len(times))])
            self.answer(200, {"data": {"id": "0", "type": "timeseries_response",
                                       "attributes": {"series": series, "times": times, "values": points}}}, rate)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(json.dumps({"url": f"http://127.0.0.1:{server.server_address[1]}"}), flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()

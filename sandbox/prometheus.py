"""A real Prometheus for the sandbox's `prometheus` scenarios: Debian's `prometheus` server
(scripts/setup.sh installs it) scraping, every second, a small exporter whose gauges the
scenario sets — the canary's and the stable cluster's error ratio, as an ingress controller's
metrics would give them. Both on free loopback ports; `Metrics` is a context manager that stops
them and removes the TSDB. `Outage`, a proxy in front of it, plays its outages (503s, answers
past the functions' request timeout).
"""
import json
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .harness import free_port, wait_port
from .lambda_service import reply

METRIC = "canary_error_ratio"
JSON = [("Content-Type", "application/json")]


class Metrics:
    def __init__(self, ratios, log=print):
        """`ratios`: cluster name -> the error ratio it starts with."""
        self.ratios = dict(ratios)
        self.log = log
        self.lock = threading.Lock()
        self.exporter = None
        self.process = None
        self.dir = None
        self.url = None

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        metrics = self

        class Exporter(BaseHTTPRequestHandler):
            disable_nagle_algorithm = True  # no 40 ms wait per answer (sandbox/front_door.py)
            def do_GET(self):
                with metrics.lock:
                    lines = [f"# TYPE {METRIC} gauge"] + [
                        f'{METRIC}{{cluster="{cluster}"}} {ratio}' for cluster, ratio in sorted(metrics.ratios.items())
                        if ratio is not None
                    ]
                # Nothing if Prometheus stopped scraping (it is being stopped).
                reply(self, 200, ("\n".join(lines) + "\n").encode(), [("Content-Type", "text/plain; version=0.0.4")])

            def log_message(self, *args):
                pass

        self.exporter = ThreadingHTTPServer(("127.0.0.1", 0), Exporter)
        threading.Thread(target=self.exporter.serve_forever, daemon=True).start()
        exporter_port = self.exporter.server_address[1]
        self.dir = tempfile.mkdtemp(prefix="cluster-canary-sandbox-prometheus-")
        config = f"{self.dir}/prometheus.yml"
        with open(config, "w") as f:
            f.write(
                "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                "scrape_configs:\n"
                f"  - job_name: ingress\n    static_configs: [{{targets: ['127.0.0.1:{exporter_port}']}}]\n"
            )
        port = free_port()
        self.process = subprocess.Popen(
            [
                "prometheus",
                f"--config.file={config}",
                f"--storage.tsdb.path={self.dir}/data",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=open(f"{self.dir}/prometheus.log", "w"),
        )
        wait_port(port, 60, self.process, "prometheus (scripts/setup.sh installs Debian's package)")
        self.url = f"http://127.0.0.1:{port}"
        for cluster, ratio in self.ratios.items():
            self.wait_for(cluster, ratio)
        self.log(f"prometheus: {self.url}, scraping the error ratios {self.ratios}")

    def set(self, cluster, ratio):
        """The exporter's next scrape says `cluster`'s error ratio is `ratio` (None: the series
        is gone, so Prometheus marks it stale and a query finds nothing); returns once Prometheus
        has it."""
        with self.lock:
            self.ratios[cluster] = ratio
        self.wait_for(cluster, ratio)

    def query(self, promql):
        body = urllib.parse.urlencode({"query": promql}).encode()
        with urllib.request.urlopen(f"{self.url}/api/v1/query", data=body, timeout=10) as answer:
            return json.load(answer)["data"]["result"]

    def wait_for(self, cluster, ratio, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                result = self.query(f'{METRIC}{{cluster="{cluster}"}}')
                if ratio is None and not result or result and ratio is not None and float(result[0]["value"][1]) == float(ratio):
                    return
            except OSError:
                pass  # still starting
            time.sleep(0.2)
        raise RuntimeError(f"prometheus did not scrape {cluster}={ratio} within {timeout} s")

    def stop(self):
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        if self.exporter is not None:
            self.exporter.shutdown()
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)


class Outage:
    """A proxy in front of Prometheus (its `url`): `answer = "error"` answers 503, `"slow"` holds
    each answer `seconds` (longer than the functions' request timeout: an overloaded or half-down
    Prometheus), None forwards as it comes."""

    def __init__(self, upstream, seconds=30):
        outage = self
        self.answer, self.seconds = None, seconds

        class Handler(BaseHTTPRequestHandler):
            disable_nagle_algorithm = True  # no 40 ms wait per answer (sandbox/front_door.py)
            def do_GET(self):
                self.forward(None)

            def do_POST(self):
                self.forward(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

            def forward(self, data):
                answer = outage.answer
                if answer == "error":
                    return reply(self, 503, b'{"status":"error","errorType":"unavailable","error":"history: down"}', JSON)
                if answer == "slow":
                    time.sleep(outage.seconds)
                request = urllib.request.Request(upstream + self.path, data=data, method=self.command)
                if self.headers.get("Content-Type"):
                    request.add_header("Content-Type", self.headers["Content-Type"])
                try:
                    with urllib.request.urlopen(request, timeout=10) as forwarded:
                        reply(self, forwarded.status, forwarded.read(), JSON)
                except urllib.error.HTTPError as refused:
                    reply(self, refused.code, refused.read(), JSON)
                except OSError:
                    pass  # Prometheus is being stopped

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def analysis(url, max_ratio=0.05):
    """A plan's `analysis` that judges the canary by its error ratio in Prometheus."""
    return {
        "prometheus": {
            "url": url,
            "checks": [
                {
                    "name": "canary error ratio",
                    "query": f'max({METRIC}{{cluster="{{{{cluster}}}}"}})',
                    "max": max_ratio,
                }
            ],
        },
        "failureLimit": 1,
    }

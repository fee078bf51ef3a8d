"""The load balancer's CloudWatch metrics for the canary and the stable target groups, put
every second (high resolution, so a sandbox-sized check period of 1 s has a datapoint in each)
as ALB publishes them per target group. `values(second)` says what to put: {"canary":
{metric name: value}, "stable": {...}}, `second` counting from the first put; the built-in ALB
checks (sandbox/histories.py) and the comparison (sandbox/compare.py) read them."""

import threading
from datetime import datetime, timezone


class AlbMetrics:
    def __init__(self, sandbox, values):
        world = sandbox.world
        listener = sandbox.client("elbv2").describe_listeners(ListenerArns=[world.listener])["Listeners"][0]
        self.load_balancer = listener["LoadBalancerArn"].split(":loadbalancer/", 1)[1]
        self.groups = {"canary": world.green_tg.rsplit(":", 1)[1], "stable": world.blue_tg.rsplit(":", 1)[1]}
        self.cloudwatch = sandbox.client("cloudwatch")
        self.values = values
        self.second = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.feed, daemon=True)

    def __enter__(self):
        self.put()
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self.thread.join(timeout=10)

    def feed(self):
        while not self.stopping.wait(1.0):
            self.put()

    def put(self):
        now = datetime.now(timezone.utc)
        values = self.values(self.second)
        self.second += 1
        data = []
        for side, group in self.groups.items():
            dimensions = [{"Name": "LoadBalancer", "Value": self.load_balancer}, {"Name": "TargetGroup", "Value": group}]
            for name, value in values[side].items():
                data.append({"MetricName": name, "Dimensions": dimensions, "Value": value, "Timestamp": now,
                             "StorageResolution": 1})
        self.cloudwatch.put_metric_data(Namespace="AWS/ApplicationELB", MetricData=data)

"""Load balancers' CloudWatch metrics for target groups, put every second (high resolution, so a
sandbox-sized check period of 1 s has a datapoint in each) as ALB publishes them per target
group. By default the world's listener with its canary and stable target groups; `groups`
names others: {key: (listener ARN, target group ARN)}. `values(second)` says what to put:
{key: {metric name: value}}, `second` counting from the first put. The built-in ALB checks
(sandbox/histories.py) and the comparison (sandbox/compare.py, the fleet-outlier scenario) read
them."""

import threading
from datetime import datetime, timezone


class AlbMetrics:
    def __init__(self, sandbox, values, groups=None):
        world = sandbox.world
        groups = groups or {"canary": (world.listener, world.green_tg), "stable": (world.listener, world.blue_tg)}
        # The dimensions: `app/<name>/<id>` of the listener's load balancer, `targetgroup/<name>/<id>`.
        self.dimensions = {key: (listener.split(":listener/", 1)[1].rsplit("/", 1)[0], group.rsplit(":", 1)[1])
                           for key, (listener, group) in groups.items()}
        self.load_balancer = self.dimensions[next(iter(groups))][0]
        self.groups = {key: group for key, (_, group) in self.dimensions.items()}
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
        for key, (load_balancer, group) in self.dimensions.items():
            dimensions = [{"Name": "LoadBalancer", "Value": load_balancer}, {"Name": "TargetGroup", "Value": group}]
            for name, value in values[key].items():
                data.append({"MetricName": name, "Dimensions": dimensions, "Value": value, "Timestamp": now,
                             "StorageResolution": 1})
        self.cloudwatch.put_metric_data(Namespace="AWS/ApplicationELB", MetricData=data)

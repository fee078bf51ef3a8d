"""Load balancers' CloudWatch metrics for target groups, put every second (high resolution, so a
sandbox-sized check period of 1 s has a datapoint in each) as ALB publishes them per target
group (`AlbMetrics`), and as VPC Lattice does (`LatticeMetrics`). By default the world's
listener with its canary and stable target groups; `groups` names others: {key: (listener ARN,
target group ARN)}. `values(second)` says what to put: {key: {metric name: value}}, `second`
counting from the first put; a value may be a distribution, {"values": [...], "counts": [...]},
the requests of the second. The built-in target group checks (sandbox/histories/,
tests/e2e/test_vpc_lattice.py) and the comparison (sandbox/compare.py, the fleet-outlier
scenario) read them.

As ALB does, a target group its listener gives no traffic (a forward weight of 0, read from moto
each second) gets no datapoint at all: not a 0, nothing. So the baseline's metrics stop at the
100 % step and the canary's before its first step and after a rollback, and a check that
compares the two sees what it would see in AWS. A group the listener's default action does not
name (a rule's) is published whatever its weight."""

import threading
from datetime import datetime, timezone


class TargetGroupMetrics:
    """Puts `values(second)` every second for each key's target group: the publisher's
    `namespace`, each key's `dimensions`, and no datapoint for the keys `idle()` names."""

    namespace = None

    def __init__(self, sandbox, values, dimensions):
        self.dimensions = dimensions
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

    def idle(self):
        return set()

    def put(self):
        now = datetime.now(timezone.utc)
        values = self.values(self.second)
        self.second += 1
        idle = self.idle()
        data = []
        for key, dimensions in self.dimensions.items():
            if key in idle:
                continue
            for name, value in values[key].items():
                datum = {"MetricName": name, "Dimensions": dimensions, "Timestamp": now, "StorageResolution": 1}
                if isinstance(value, dict):
                    # Requests' values as a load balancer publishes a distribution: each value
                    # with its count (CloudWatch's percentiles, trimmed counts and percentile
                    # ranks read them).
                    datum.update(Values=value["values"], Counts=value["counts"])
                else:
                    datum["Value"] = value
                data.append(datum)
        if data:
            self.cloudwatch.put_metric_data(Namespace=self.namespace, MetricData=data)


class AlbMetrics(TargetGroupMetrics):
    namespace = "AWS/ApplicationELB"

    def __init__(self, sandbox, values, groups=None):
        world = sandbox.world
        groups = groups or {"canary": (world.listener, world.green_tg), "stable": (world.listener, world.blue_tg)}
        # The dimensions: `app/<name>/<id>` of the listener's load balancer, `targetgroup/<name>/<id>`.
        named = {key: (listener.split(":listener/", 1)[1].rsplit("/", 1)[0], group.rsplit(":", 1)[1])
                 for key, (listener, group) in groups.items()}
        self.load_balancer = named[next(iter(groups))][0]
        self.groups = {key: group for key, (_, group) in named.items()}
        self.elbv2 = sandbox.client("elbv2")
        self.listeners = {key: listener for key, (listener, _) in groups.items()}
        self.group_arns = {key: group for key, (_, group) in groups.items()}
        super().__init__(sandbox, values, {
            key: [{"Name": "LoadBalancer", "Value": load_balancer}, {"Name": "TargetGroup", "Value": group}]
            for key, (load_balancer, group) in named.items()})

    def idle(self):
        """The keys whose target group its listener's default action forwards no traffic to."""
        weights = {}
        for listener in set(self.listeners.values()):
            try:
                described = self.elbv2.describe_listeners(ListenerArns=[listener])["Listeners"]
            except Exception:  # a listener gone or moto busy: publish as before, never fail the feed
                continue
            for action in described[0].get("DefaultActions", []) if described else []:
                for group in action.get("ForwardConfig", {}).get("TargetGroups", []):
                    weights[(listener, group["TargetGroupArn"])] = group.get("Weight", 1)
        return {key for key, listener in self.listeners.items()
                if weights.get((listener, self.group_arns[key]), 1) == 0}


class LatticeMetrics(TargetGroupMetrics):
    """VPC Lattice's metrics of the `vpc-lattice` world's two target groups (`canary`: green's,
    `stable`: blue's): namespace `AWS/VpcLattice`, dimension `TargetGroup` = the group's ID,
    `TotalRequestCount`, `HTTPCode_5XX_Count` and `RequestTime` in milliseconds as `values`
    names them. A group the service's listener gives weight 0 (or does not name) gets nothing."""

    namespace = "AWS/VpcLattice"

    def __init__(self, sandbox, values):
        world = sandbox.world
        self.lattice = sandbox.client("vpc-lattice")
        self.service, self.listener = world.lattice_service, world.lattice_listener
        self.groups = {"canary": world.lattice_green_tg, "stable": world.lattice_blue_tg}
        super().__init__(sandbox, values, {
            key: [{"Name": "TargetGroup", "Value": group}] for key, group in self.groups.items()})

    def idle(self):
        try:
            action = self.lattice.get_listener(serviceIdentifier=self.service,
                                               listenerIdentifier=self.listener)["defaultAction"]
        except Exception:  # moto busy: publish as before, never fail the feed
            return set()
        weights = {group["targetGroupIdentifier"]: group.get("weight", 0)
                   for group in action.get("forward", {}).get("targetGroups", [])}
        return {key for key, group in self.groups.items() if weights.get(group, 0) == 0}

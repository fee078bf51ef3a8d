"""Stand-ins for the controllers that own weights in our users' clusters, running against the
sandbox's moto as the real ones run against AWS (docs/traffic/alb.md and route53.md, "Who owns
the weights"; ../shared/notes/traffic-owners-and-metric-providers.md).

- `ExternalDns`: one instance per cluster, with its own owner id. It owns a weighted record by
  (name, set identifier) through a TXT registry record beside it, in ExternalDNS's format: the
  record type on the first label (`a-app.example.com.`, `cname-…`; `--txt-prefix` as a plain
  prefix), the value `"heritage=external-dns,external-dns/owner=<id>,external-dns/resource=ingress/<ns>/<name>"`.
  On start it takes the records it is given (creating their registry records) unless another
  owner's registry record is there; then, under `--policy sync`, every `interval` it UPSERTs
  each record it owns whose weight differs from its source's (the Ingress annotation
  `…/aws-weight`). It never touches a record whose registry record names another owner. Its
  source is an `IngressSource` — its cluster's Ingress, read from the Kubernetes test server
  (where the Argo CD simulation's sync writes it) — or, without one, the weights it is given
  (`set_weight` stands for an edit of the Ingress).
- `LoadBalancerController`: the AWS Load Balancer Controller for one Ingress group: it tags the
  listener as it tags what it creates (`elbv2.k8s.aws/cluster`, `ingress.k8s.aws/stack`,
  `ingress.k8s.aws/resource`) and, every `interval` (a reconcile of the group: an Ingress
  change, a restart, the resync), writes its model's weights back to the listener's forward
  action when they differ.

Not modelled: Services as sources, the Ingress's hostname and load balancer status (the
records' names and alias targets are given to the constructor; only the weight comes from the
Ingress), ExternalDNS's other record fields,
deletions, `upsert-only`'s refusal to delete, the AAAA and legacy registry names, batching and
Route 53 rate limits; the Load Balancer Controller's rules (only a listener's default action),
its deletion of unknown rules, TargetGroupBinding, and any event-driven reconcile (only the
timer).
"""
import base64
import contextlib
import json
import ssl
import threading
import urllib.error
import urllib.request

HERITAGE = "heritage=external-dns"


class IngressSource:
    """One Ingress in one workload cluster of the Kubernetes test server
    (`/clusters/<cluster>/…`, tests/kube/kube_api_server.py), as ExternalDNS's ingress source
    reads it: which set identifier and weight its annotations (`prefix`) ask for."""

    def __init__(self, kube, token, cluster, namespace, name, prefix="external-dns.kubernetes.io/"):
        self.url = (f"{kube['server']}/clusters/{cluster}/apis/networking.k8s.io/v1"
                    f"/namespaces/{namespace}/ingresses/{name}")
        self.context = ssl.create_default_context(cadata=base64.b64decode(kube["caData"]).decode())
        self.token, self.prefix = token, prefix

    def wanted(self):
        """(set identifier, weight) the Ingress asks for; None while there is no Ingress or its
        weight is no integer (ExternalDNS then leaves the record as it is)."""
        request = urllib.request.Request(self.url, headers={"Authorization": f"Bearer {self.token}"})
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=10) as response:
                annotations = json.load(response)["metadata"].get("annotations") or {}
        except urllib.error.HTTPError as error:
            if error.code == 404:
                return None
            raise
        weight = annotations.get(f"{self.prefix}aws-weight", "")
        set_identifier = annotations.get(f"{self.prefix}set-identifier")
        return (set_identifier, int(weight)) if weight.isdigit() and set_identifier else None


class _Loop:
    """Runs `reconcile()` every `interval` seconds on a thread, from `start()` (which
    reconciles once at once) to `stop()`; `reconciles` counts the passes that wrote. A pass
    that fails is kept in `errors` and the loop goes on, as a controller requeues."""

    def __init__(self, interval):
        self.interval = interval
        self.stopping = threading.Event()
        self.thread = None
        self.reconciles = 0
        self.errors = []
        self.passing = threading.Lock()

    def start(self):
        self._pass()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def _run(self):
        while not self.stopping.wait(self.interval):
            try:
                self._pass()
            except Exception as error:  # noqa: BLE001 (any failure is kept, not raised)
                self.errors.append(error)

    def _pass(self):
        with self.passing:
            if self.reconcile():
                self.reconciles += 1

    @contextlib.contextmanager
    def paused(self):
        """No pass runs inside the block (one under way ends first): the controller between two
        reconciles for as long as a test needs, whatever the machine's load."""
        with self.passing:
            yield

    def stop(self):
        self.stopping.set()
        if self.thread:
            self.thread.join(timeout=10)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


class ExternalDns(_Loop):
    def __init__(self, route53, zone_id, owner, records, resource="ingress/shop/web", interval=1.0,
                 txt_prefix="", source=None):
        """`route53` is a boto3 client; `records` maps (name, type, set identifier) to the record
        this cluster's Ingress asks for: {"Weight": w, "AliasTarget": …} or {"Weight": w, "TTL": …,
        "ResourceRecords": …}; set identifier None (and no Weight) for a simple record, such as a
        per-cluster name."""
        super().__init__(interval)
        self.route53, self.zone_id, self.owner = route53, zone_id, owner
        self.records = {key: dict(value) for key, value in records.items()}
        self.resource, self.txt_prefix, self.source = resource, txt_prefix, source
        self.lock = threading.Lock()

    @classmethod
    def for_records(cls, route53, zone_id, owner, name, rr_type, weights, **options):
        """An instance that owns the zone's existing `name`/`rr_type` records of the set
        identifiers in `weights` (set identifier -> the weight its Ingress asks for), as if it
        had created them."""
        found = route53.list_resource_record_sets(HostedZoneId=zone_id, StartRecordName=name,
                                                  StartRecordType=rr_type)["ResourceRecordSets"]
        records = {}
        for record in found:
            if record["Name"] == name and record["Type"] == rr_type and record.get("SetIdentifier") in weights:
                spec = {k: v for k, v in record.items() if k in ("AliasTarget", "TTL", "ResourceRecords")}
                records[(name, rr_type, record["SetIdentifier"])] = {**spec, "Weight": weights[record["SetIdentifier"]]}
        return cls(route53, zone_id, owner, records, **options)

    def set_weight(self, name, rr_type, set_identifier, weight):
        """Someone edits the Ingress annotation: the next interval writes it."""
        with self.lock:
            self.records[(name, rr_type, set_identifier)]["Weight"] = weight

    def registry_name(self, name, rr_type):
        # ExternalDNS names the A alias's registry record `cname-` (its "new format" for A).
        kind = "cname" if rr_type in ("A", "CNAME") else rr_type.lower()
        return f"{self.txt_prefix}{kind}-{name}"

    def registry_value(self):
        return f'"{HERITAGE},external-dns/owner={self.owner},external-dns/resource={self.resource}"'

    def _zone(self):
        """What the zone holds now: (registry name, set identifier) -> owner id, from the TXT
        registry records; (name, type, set identifier) -> weight of every weighted record."""
        owners, weights = {}, {}
        pages = self.route53.get_paginator("list_resource_record_sets").paginate(HostedZoneId=self.zone_id)
        for page in pages:
            for record in page["ResourceRecordSets"]:
                key = (record["Name"], record["Type"], record.get("SetIdentifier"))
                weights[key] = record.get("Weight")
                for value in record.get("ResourceRecords", []) if record["Type"] == "TXT" else []:
                    text = value["Value"]
                    if HERITAGE in text and "external-dns/owner=" in text:
                        owner = text.split("external-dns/owner=")[1].split(",")[0].strip('"')
                        owners[(record["Name"], record.get("SetIdentifier"))] = owner
        return owners, weights

    def reconcile(self):
        """One interval under `--policy sync`: the records this instance owns, back to what
        its source asks for; registry records for those it creates. True when it wrote."""
        wanted_weight = self.source.wanted() if self.source else None
        if wanted_weight:
            set_identifier, weight = wanted_weight
            with self.lock:
                for key, spec in self.records.items():
                    if key[2] == set_identifier:
                        spec["Weight"] = weight
        owners, current = self._zone()
        changes = []
        with self.lock:
            wanted = {key: dict(spec) for key, spec in self.records.items()}
        for (name, rr_type, set_identifier), spec in wanted.items():
            registry = self.registry_name(name, rr_type)
            owner = owners.get((registry, set_identifier))
            if owner is not None and owner != self.owner:
                continue  # another instance's record: never touched
            # A weighted record's registry record is weighted alike; a simple record's is simple.
            routing = {"SetIdentifier": set_identifier, "Weight": spec["Weight"]} if set_identifier else {}
            if owner is None:
                changes.append({"Action": "UPSERT", "ResourceRecordSet": {
                    "Name": registry, "Type": "TXT", **routing,
                    "TTL": 300, "ResourceRecords": [{"Value": self.registry_value()}]}})
            if owner is None or current.get((name, rr_type, set_identifier)) != spec.get("Weight"):
                changes.append({"Action": "UPSERT", "ResourceRecordSet": {"Name": name, "Type": rr_type, **spec, **routing}})
        if changes:
            self.route53.change_resource_record_sets(HostedZoneId=self.zone_id, ChangeBatch={"Changes": changes})
        return bool(changes)


class LoadBalancerController(_Loop):
    def __init__(self, elbv2, listener, weights, cluster="blue", stack="shop/web", interval=1.0):
        """`elbv2` is a boto3 client; `weights` maps target group ARN -> weight: the Ingress
        group's model (its `actions.<name>` annotation)."""
        super().__init__(interval)
        self.elbv2, self.listener, self.weights = elbv2, listener, dict(weights)
        self.cluster, self.stack = cluster, stack

    def start(self):
        port = self.elbv2.describe_listeners(ListenerArns=[self.listener])["Listeners"][0]["Port"]
        self.elbv2.add_tags(ResourceArns=[self.listener], Tags=[
            {"Key": "elbv2.k8s.aws/cluster", "Value": self.cluster},
            {"Key": "ingress.k8s.aws/stack", "Value": self.stack},
            {"Key": "ingress.k8s.aws/resource", "Value": str(port)},
        ])
        return super().start()

    def reconcile(self):
        """One reconcile of the Ingress group: the listener's weights back to the model. True
        when it wrote."""
        listener = self.elbv2.describe_listeners(ListenerArns=[self.listener])["Listeners"][0]
        current = {tg["TargetGroupArn"]: tg.get("Weight") for action in listener["DefaultActions"]
                   for tg in action.get("ForwardConfig", {}).get("TargetGroups", [])}
        if current == self.weights:
            return False
        groups = [{"TargetGroupArn": arn, "Weight": weight} for arn, weight in self.weights.items()]
        self.elbv2.modify_listener(ListenerArn=self.listener, DefaultActions=[
            {"Type": "forward", "ForwardConfig": {"TargetGroups": groups}}])
        return True

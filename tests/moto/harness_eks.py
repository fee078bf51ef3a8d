"""Sets what EKS computes itself on the moto harness (patch 20 of moto_server.py): a cluster's
insight or an add-on's health. Not AWS's API: the harness's own control.

    python harness_eks.py <moto endpoint> <account>/<region>/clusters/<name>/insights '<insight JSON>'
    python harness_eks.py <moto endpoint> <account>/<region>/clusters/<name>/addons/<addon>/health '{"status": ...}'

Prints the harness's answer; exits 1 when it refused.
"""
import json
import sys
import urllib.error
import urllib.request


def post(endpoint, path, body):
    """The harness's answer to `body` at `path` (after /_harness/eks/)."""
    sent = urllib.request.Request(f"{endpoint}/_harness/eks/{path}", data=json.dumps(body).encode(),
                                  method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(sent) as answer:
        return json.load(answer)


if __name__ == "__main__":
    endpoint, path, body = sys.argv[1:4]
    try:
        print(json.dumps(post(endpoint, path, json.loads(body))))
    except urllib.error.HTTPError as e:
        print(e.read().decode(), file=sys.stderr)
        sys.exit(1)

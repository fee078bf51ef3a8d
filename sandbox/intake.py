"""EKS CreateCluster and DeleteCluster calls, delivered to cluster-created as AWS delivers them.

CloudTrail's record of the call goes on the account's default bus
(`scenarios.put_create_cluster_event`); moto's EventBridge matches it against the stack's rule for
`aws.eks` and invokes the rule's function asynchronously; Lambda's event queue (event_queue.py)
delivers it, tries it again after a function error as often as the function's EventInvokeConfig
says (none for cluster-created: it retries what can pass itself) and sends Lambda's record of it
to the function's on-failure destination after the last try (lambda_service.py). The last answer of each
delivery is kept by CloudTrail's event id (`answer_for`).
"""
import time

from .event_queue import RuleDeliveries


class NoRolloutStarted(Exception):
    """cluster-created started no rollout for a new cluster: the sentence says why."""


class IntakeEvents(RuleDeliveries):
    SOURCE = "aws.eks"

    def __init__(self, *args):
        super().__init__(*args)
        self.answers = {}  # CloudTrail event id -> (function error, answer)

    def reacted(self, payload, error, answer):
        detail = payload.get("detail", {})
        self.answers[detail.get("eventID")] = (error, answer)
        cluster = (detail.get("requestParameters") or {}).get("name")
        self.log(f"cluster-created, for {detail.get('eventName')} of {cluster}: "
                 + (f"failed: {answer}" if error else f"{answer.get('action')}: {answer.get('reason')}"))

    def answer_for(self, event_id):
        """(function error, answer) of the delivery of CloudTrail event `event_id`, once its last
        try ended; None before."""
        return self.answers.get(event_id)

    def started(self, event_id, cluster, started, timeout=60):
        """The execution cluster-created started for CloudTrail event `event_id` of `cluster`, as
        `started()` finds it (an ARN or None); `NoRolloutStarted` when the function skipped the
        event, answered it as a repeated delivery, or failed it on every try."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            arn = started()
            if arn:
                return arn
            delivered = self.answer_for(event_id)
            if delivered:
                error, answer = delivered
                if error:
                    raise NoRolloutStarted(
                        f"cluster-created started no rollout for cluster {cluster}: "
                        f"{answer.get('errorType')}: {answer.get('errorMessage')} (the event is in "
                        "the stack's ClusterIntakeDeadLetterQueue)")
                if answer.get("action") in ("skipped", "duplicate"):
                    raise NoRolloutStarted(f"cluster-created started no rollout for cluster {cluster}: {answer.get('reason')}")
            time.sleep(0.2)
        raise NoRolloutStarted(f"cluster-created started no rollout for cluster {cluster} in {timeout} s (see functions.log)")

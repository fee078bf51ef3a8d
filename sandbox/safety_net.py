"""Step Functions execution status changes, delivered to the safety nets (the rollouts' and the
fleets') as AWS delivers them.

moto's engine puts the `Step Functions Execution Status Change` event on the account's default
bus when an execution ends (tests/moto/moto_server.py); moto's EventBridge matches it against
the stack's SafetyNet rule and invokes the rule's function asynchronously with the rule's
InputTransformer applied; that invocation waits in Lambda's event queue (event_queue.py). The
sandbox keeps each answer by execution: `answer_for` tells what the safety net did, `held()`
delays it (a delivery that arrives late), and disabling the rule (`rule`) loses the events.
"""
import time

from .event_queue import RuleDeliveries


class SafetyNetEvents(RuleDeliveries):
    SOURCE = "aws.states"
    MACHINE = "-rollout"
    WHAT = "safety net"
    # The execution the rule's input names.
    EXECUTION = "executionArn"

    def __init__(self, *args):
        super().__init__(*args)
        self.answers = {}  # execution ARN -> (function error, answer)

    def reacted(self, payload, error, answer):
        execution = payload[self.EXECUTION]
        self.answers[execution] = (error, answer)
        self.log(f"{self.WHAT}, for {execution.rsplit(':', 1)[-1]} ended {payload['status']}: "
                 + (f"failed: {answer}" if error else answer.get("reason", str(answer))))

    def matches(self, status):
        """Whether the rule's pattern takes an execution that ended `status`."""
        return status in self.pattern["detail"]["status"]

    def answer_for(self, execution_arn, timeout=60):
        """What the safety net answered for `execution_arn`, once its event was delivered."""
        deadline = time.monotonic() + timeout
        while execution_arn not in self.answers:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the SafetyNet rule delivered nothing for {execution_arn} in {timeout} s")
            time.sleep(0.2)
        error, answer = self.answers[execution_arn]
        if error:
            raise RuntimeError(f"safety net failed: {answer}")
        return answer


class FleetSafetyNetEvents(SafetyNetEvents):
    """The stack's FleetSafetyNet rule: a fleet that ended ABORTED, FAILED or TIMED_OUT has its
    running cells stopped by fleet-waves (`stopCells`)."""
    MACHINE = "-fleet"
    EXECUTION = "fleetExecution"
    WHAT = "fleet safety net"

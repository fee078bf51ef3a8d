"""The sandbox is the stack `sam deploy` creates: its functions run with exactly the environment
the template gives each (and Lambda's own variables), and a template that forgets a variable
one function needs fails that function as it would on AWS (`scripts/sandbox.sh --template`
tries such a template)."""
import json
import shutil
import time
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from helpers import assert_runs_as_the_stack_declares, captured
from sandbox import scenarios
from sandbox.harness import REPO, Sandbox

def test_each_function_runs_with_the_stacks_environment_and_its_roles_credentials():
    with Sandbox(log=captured) as sandbox:
        report = scenarios.run_on(sandbox, "happy", captured, False)
        assert report.status == "SUCCEEDED", report.cause
        lambda_client = sandbox.client("lambda")
        for logical in sandbox.stack.functions():
            # The fleet's function runs only in a fleet: test_fleets.py checks it there.
            if logical != "FleetWavesFunction":
                assert_runs_as_the_stack_declares(sandbox, logical)
        # One function's variables are not another's.
        created = sandbox.function("cluster-created")
        shift = sandbox.function("shift-weights")
        assert "STATE_MACHINE_ARN" in lambda_client.get_function_configuration(FunctionName=created)["Environment"]["Variables"]
        assert "STATE_MACHINE_ARN" not in lambda_client.get_function_configuration(FunctionName=shift)["Environment"]["Variables"]


def test_a_template_that_forgets_a_functions_variable_fails_that_function(tmp_path):
    text = (REPO / "template.yaml").read_text()
    passed = "          STATE_MACHINE_ARN: !Ref RolloutStateMachine\n"
    assert passed in text, "the template passes it"
    forgetful = tmp_path / "template.yaml"
    forgetful.write_text(text.replace(passed, ""))
    # Its paths are relative to it, as `sam deploy` reads them.
    shutil.copytree(REPO / "statemachine", tmp_path / "statemachine")
    with Sandbox(log=captured, template=forgetful) as sandbox:
        scenarios.create_green(sandbox)
        error, answer = sandbox.invoke("cluster-created", scenarios.create_cluster_event(sandbox))
        assert error == "Unhandled", answer
        assert answer["errorType"] == "Runtime.ExitError", answer
        log = (Path(sandbox.run_dir) / "functions.log").read_text()
        assert "STATE_MACHINE_ARN is not set" in log
        executions = sandbox.client("stepfunctions").list_executions(stateMachineArn=sandbox.state_machine)["executions"]
        assert executions == [], "nothing started"


def test_a_function_past_its_timeout_is_ended_as_lambda_ends_it(tmp_path):
    """A template whose shift-weights may run 1 s, and an ELBv2 that takes 3 s to describe a
    listener: Prepare is ended at the timeout, as Lambda ends it, and the rollout fails before
    any traffic moves."""
    text = (REPO / "template.yaml").read_text()
    shift_weights = "      CodeUri: functions/shift-weights\n"
    assert shift_weights in text
    # shift-weights' own Timeout line is the first `Timeout: 300` after its CodeUri.
    head, tail = text.split(shift_weights, 1)
    tail = tail.replace("      Timeout: 300\n", "      Timeout: 1\n", 1)
    short = tmp_path / "template.yaml"
    short.write_text(head + shift_weights + tail)
    shutil.copytree(REPO / "statemachine", tmp_path / "statemachine")

    def slow_listener(method, path, body):
        if b"Action=DescribeListeners" in body:
            time.sleep(3)
        return False

    with Sandbox(log=captured, template=short) as sandbox:
        shift = sandbox.function("shift-weights")
        assert sandbox.client("lambda").get_function_configuration(FunctionName=shift)["Timeout"] == 1
        sandbox.front.faults.append([slow_listener, 1_000_000, None])
        scenarios.create_green(sandbox)
        error, started = sandbox.invoke("cluster-created", scenarios.create_cluster_event(sandbox))
        assert not error, started
        # Nothing moved, so the safety net has nothing to do; deployed with the same 1 s
        # timeout, on a busy machine it times out too (docs/testing.md): not what this tests.
        report = scenarios.watch(sandbox, started["executionArn"], out=captured, await_safety_net=False)
        assert report.status == "FAILED"
        assert report.error == "Sandbox.Timedout", (report.error, report.cause)
        assert "Task timed out after 1.00 seconds" in report.cause
        assert report.max_canary == 0, "nothing moved"


def test_an_invocation_over_lambdas_payload_limit_is_refused_as_lambda_refuses_it():
    with Sandbox(log=captured) as sandbox:
        function = sandbox.function("shift-weights")
        oversized = json.dumps({"operation": "prepare", "padding": "x" * (6 * 1024 * 1024)}).encode()
        with pytest.raises(ClientError) as refused:
            sandbox.client("lambda").invoke(FunctionName=function, Payload=oversized)
        assert refused.value.response["Error"]["Code"] == "RequestTooLargeException"
        assert sandbox.functions.functions[function].instances == [], "the function never ran"

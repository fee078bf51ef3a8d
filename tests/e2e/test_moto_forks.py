"""A sandbox's moto is forked from a process that imported moto once (sandbox/moto_forks.py):
each server must still be a world of its own, ended on its own, and a forking process that is
gone must be replaced rather than fail the next sandbox. (That each gets the environment it is
given, MOTO_PORT above all, every rollout of the end-to-end tests shows: moto's Step Functions
engine reaches the sandbox's Lambda through it.)"""
import hashlib
import json
import os
import pathlib
import signal
import tempfile
import time
import urllib.request

import boto3
import pytest

from sandbox import moto_forks

CREDENTIALS = {"aws_access_key_id": "test", "aws_secret_access_key": "test", "region_name": "us-east-1"}


def sqs(endpoint):
    return boto3.client("sqs", endpoint_url=endpoint, **CREDENTIALS)


@pytest.fixture
def servers(tmp_path):
    started = []

    def start(name):
        server, endpoint = moto_forks.start({"MOTO_PORT": "9"}, tmp_path / f"{name}.log")
        started.append(server)
        return server, endpoint

    yield start
    for server in started:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=10)


def test_each_forked_server_is_a_world_of_its_own_and_ends_on_its_own(servers):
    first, first_endpoint = servers("first")
    second, second_endpoint = servers("second")
    assert first.pid != second.pid and first_endpoint != second_endpoint
    sqs(first_endpoint).create_queue(QueueName="only-in-the-first")
    assert "QueueUrls" not in sqs(second_endpoint).list_queues(), "nothing of the first in the second"
    # Its own session: ending it as the sandbox does ends it alone.
    os.killpg(first.pid, signal.SIGTERM)
    assert first.wait(timeout=10) is not None
    assert "QueueUrls" not in sqs(second_endpoint).list_queues()
    assert second.poll() is None


def test_a_forking_process_that_is_gone_is_replaced(servers):
    servers("before")
    forker = moto_forks._forker[0]
    os.killpg(forker.pid, signal.SIGKILL)
    forker.wait()
    _, endpoint = servers("after")
    assert moto_forks._forker[0].pid != forker.pid
    sqs(endpoint).create_queue(QueueName="served")


def test_a_definition_a_server_parsed_is_parsed_by_the_forking_process_for_the_next_servers(servers):
    """Patch 27: a server leaves each definition it parsed in its forking process's folder; the
    forking process parses it before its next fork, and a server it forks then leaves nothing
    (it was born with the tree), yet runs the definition as the first did."""
    definition = json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Pass", "Result": {"said": "parsed"}, "End": True}}})
    servers("warm")  # the forking process is running
    folder = pathlib.Path(tempfile.gettempdir(), f"moto-definitions-{moto_forks._forker[0].pid}")
    left = folder / f"{hashlib.sha256(definition.encode()).hexdigest()}.json"

    def run(endpoint):
        sfn = boto3.client("stepfunctions", endpoint_url=endpoint, **CREDENTIALS)
        urllib.request.urlopen(urllib.request.Request(
            f"{endpoint}/moto-api/config", data=json.dumps({"stepfunctions": {"execute_state_machine": True}}).encode(),
            headers={"Content-Type": "application/json"})).read()
        machine = sfn.create_state_machine(name="parsed", definition=definition,
                                           roleArn="arn:aws:iam::123456789012:role/machine")["stateMachineArn"]
        execution = sfn.start_execution(stateMachineArn=machine)["executionArn"]
        for _ in range(100):
            described = sfn.describe_execution(executionArn=execution)
            if described["status"] != "RUNNING":
                return described
            time.sleep(0.1)
        raise TimeoutError(execution)

    _, first = servers("first")
    assert json.loads(run(first)["output"]) == {"said": "parsed"}
    assert left.read_text() == definition
    _, second = servers("second")  # forked after its parent parsed the definition
    left.unlink()
    assert json.loads(run(second)["output"]) == {"said": "parsed"}
    assert not left.exists(), "the second server was born with the tree: nothing to leave"
    assert folder.is_dir()

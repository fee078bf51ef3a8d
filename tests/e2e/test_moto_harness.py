"""The moto harness speaks CloudWatch's three wire protocols alike.

aws-sdk-cloudwatch speaks only Smithy RPC v2 CBOR; boto3 speaks awsJson 1.0; the AWS CLI of
old and many tools speak awsQuery. tests/moto/moto_server.py teaches moto the CBOR one. Here
botocore, whose CBOR client is written independently of both moto and the Rust SDK, drives the
same CloudWatch operations over each protocol against one moto server, and every answer and
every error must be the same.
"""
import copy
import json
import re
import datetime
import subprocess
import sys
import time
import urllib.error
import urllib.request

import boto3
import botocore.config
import botocore.session
import pytest
from botocore.exceptions import ClientError

from sandbox.harness import REPO

PROTOCOLS = ("smithy-rpc-v2-cbor", "json", "query")
CREDENTIALS = {"aws_access_key_id": "test", "aws_secret_access_key": "test", "region_name": "us-east-1"}


@pytest.fixture(scope="module")
def moto_endpoint():
    moto = subprocess.Popen([sys.executable, str(REPO / "tests/moto/moto_server.py"), "-H", "127.0.0.1", "-p", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        line = moto.stdout.readline().decode()
        assert line, "moto_server.py did not start"
        yield json.loads(line)["endpoint"]
    finally:
        moto.terminate()
        moto.wait()


def cloudwatch(endpoint, protocol):
    """A botocore CloudWatch client that speaks `protocol` only."""
    session = botocore.session.get_session()
    loader = session.get_component("data_loader")
    load = loader.load_service_model

    def one_protocol(service_name, type_name, api_version=None):
        model = load(service_name, type_name, api_version)
        if service_name == "cloudwatch" and type_name == "service-2":
            model = copy.deepcopy(model)
            model["metadata"].update(protocol=protocol, protocols=[protocol])
        return model

    loader.load_service_model = one_protocol
    return boto3.Session(botocore_session=session, **CREDENTIALS).client("cloudwatch", endpoint_url=endpoint)


def comparable(answer):
    """An answer without its request id, timestamps to the millisecond: JSON and CBOR carry
    epoch seconds to the millisecond, awsQuery's ISO 8601 text keeps microseconds."""
    if isinstance(answer, dict):
        return {key: comparable(value) for key, value in answer.items() if key != "ResponseMetadata"}
    if isinstance(answer, list):
        return [comparable(value) for value in answer]
    if isinstance(answer, datetime.datetime):
        return answer.replace(microsecond=answer.microsecond // 1000 * 1000)
    return answer


def test_each_client_speaks_its_protocol(moto_endpoint):
    for protocol in PROTOCOLS:
        client = cloudwatch(moto_endpoint, protocol)
        assert client.meta.service_model.protocol == protocol
        sent = []
        client.meta.events.register("before-send.cloudwatch.*", lambda request, **_: sent.append(request))
        client.describe_alarms(AlarmNames=["none"])
        content_type = sent[0].headers.get("Content-Type", b"")
        content_type = content_type.decode() if isinstance(content_type, bytes) else content_type
        assert content_type == {"smithy-rpc-v2-cbor": "application/cbor", "json": "application/x-amz-json-1.0",
                                "query": "application/x-www-form-urlencoded; charset=utf-8"}[protocol]


def test_alarms_metrics_and_errors_answer_the_same_over_every_protocol(moto_endpoint):
    clients = {protocol: cloudwatch(moto_endpoint, protocol) for protocol in PROTOCOLS}
    at = datetime.datetime(2026, 11, 23, 12, 0, tzinfo=datetime.timezone.utc)
    # Each protocol writes its own alarms and data points; every protocol reads all of them.
    for protocol, client in clients.items():
        name = f"errors-{protocol}"
        client.put_metric_alarm(
            AlarmName=name, Namespace="App", MetricName="Errors", Statistic="Sum", Period=60,
            EvaluationPeriods=1, Threshold=5.0, ComparisonOperator="GreaterThanThreshold",
            Dimensions=[{"Name": "Cluster", "Value": protocol}],
        )
        client.put_composite_alarm(AlarmName=f"any-{protocol}", AlarmRule=f'ALARM("{name}")')
        client.set_alarm_state(AlarmName=name, StateValue="ALARM", StateReason=f"set over {protocol}")
        client.put_metric_data(Namespace="App", MetricData=[
            {"MetricName": "Errors", "Dimensions": [{"Name": "Cluster", "Value": protocol}], "Timestamp": at,
             "Value": 7.5, "Unit": "Count"},
        ])
        # Over 10 KiB: the SDKs gzip it (CloudWatch's requestCompression trait).
        sent = []
        client.meta.events.register("before-send.cloudwatch.PutMetricData", lambda request, **_: sent.append(request))
        client.put_metric_data(Namespace="Bulk", MetricData=[
            {"MetricName": f"padding-{n:03}-{'x' * 80}", "Value": 1.0} for n in range(150)
        ])
        assert sent[-1].headers.get("Content-Encoding") in ("gzip", b"gzip"), protocol

    def read(client):
        alarms = client.describe_alarms(AlarmNamePrefix="errors-")
        composites = client.describe_alarms(AlarmNamePrefix="any-", AlarmTypes=["CompositeAlarm"])
        data = client.get_metric_data(
            StartTime=at - datetime.timedelta(minutes=5), EndTime=at + datetime.timedelta(minutes=5),
            MetricDataQueries=[{
                "Id": f"m{n}",
                "MetricStat": {"Metric": {"Namespace": "App", "MetricName": "Errors",
                                          "Dimensions": [{"Name": "Cluster", "Value": protocol}]},
                               "Period": 60, "Stat": "Sum"},
            } for n, protocol in enumerate(PROTOCOLS)],
        )
        with pytest.raises(ClientError) as missing:
            client.set_alarm_state(AlarmName="no-such-alarm", StateValue="OK", StateReason="x")
        with pytest.raises(ClientError) as invalid:
            client.set_alarm_state(AlarmName="errors-json", StateValue="ALARM", StateReason="x",
                                   StateReasonData="not json")
        bulk = [metric["MetricName"] for page in client.get_paginator("list_metrics").paginate(Namespace="Bulk")
                for metric in page["Metrics"]]
        return {
            "bulk": sorted(set(bulk)),
            "alarms": comparable(alarms),
            "composites": comparable(composites),
            "data": comparable(data),
            "errors": [(e.value.response["Error"]["Code"], e.value.response["Error"]["Message"],
                        e.value.response["ResponseMetadata"]["HTTPStatusCode"]) for e in (missing, invalid)],
        }

    answers = {protocol: read(client) for protocol, client in clients.items()}
    cbor = answers["smithy-rpc-v2-cbor"]
    assert sorted(alarm["AlarmName"] for alarm in cbor["alarms"]["MetricAlarms"]) == sorted(f"errors-{p}" for p in PROTOCOLS)
    assert {alarm["StateValue"] for alarm in cbor["alarms"]["MetricAlarms"]} == {"ALARM"}
    assert len(cbor["composites"]["CompositeAlarms"]) == 3
    assert [result["Values"] for result in cbor["data"]["MetricDataResults"]] == [[7.5]] * 3
    assert cbor["errors"][0][0] == "ResourceNotFound"
    assert cbor["errors"][1][0] == "InvalidFormat"
    assert sorted(cbor["bulk"]) == sorted(f"padding-{n:03}-{'x' * 80}" for n in range(150)), "every compressed body read"
    assert answers["json"] == cbor
    assert answers["query"] == cbor


def test_percentiles_are_the_nearest_rank_of_each_periods_values(moto_endpoint):
    client = cloudwatch(moto_endpoint, "smithy-rpc-v2-cbor")
    at = datetime.datetime(2026, 11, 27, 12, 0, tzinfo=datetime.timezone.utc)
    # 100 values in the first minute (1 ms to 100 ms), one in the second.
    client.put_metric_data(Namespace="Latency", MetricData=[
        {"MetricName": "TargetResponseTime", "Timestamp": at + datetime.timedelta(seconds=n % 60), "Value": (n + 1) / 1000}
        for n in range(100)
    ] + [{"MetricName": "TargetResponseTime", "Timestamp": at + datetime.timedelta(seconds=61), "Value": 0.5}])

    def read(stat):
        data = client.get_metric_data(
            StartTime=at, EndTime=at + datetime.timedelta(minutes=2), ScanBy="TimestampAscending",
            MetricDataQueries=[{"Id": "latency", "MetricStat": {
                "Metric": {"Namespace": "Latency", "MetricName": "TargetResponseTime"}, "Period": 60, "Stat": stat}}],
        )
        return data["MetricDataResults"][0]["Values"]

    assert read("p99") == [0.099, 0.5]
    assert read("p50") == [0.05, 0.5]
    assert read("p99.9") == [0.1, 0.5]
    assert read("Maximum") == [0.1, 0.5], "the plain statistics as moto has them"
    # The trimmed count and percentile rank, bounds absolute: the lower one exclusive, the upper
    # inclusive, as CloudWatch's statistics definitions have them.
    assert read("TC(0.09:)") == [10, 1]
    assert read("TC(:0.05)") == [50, 0]
    assert read("TC(0.01:0.02)") == [10, 0]
    assert read("PR(:0.05)") == [50.0, 0.0]
    assert read("PR(0.1:)") == [0.0, 100.0]
    assert read("SampleCount") == [100, 1], "the divisor of a slow-request rate"


# Patch 29 beside moto's own computation, in a process of its own (importing the patches here
# would patch moto in the test worker): random points of two namespaces, three metrics, three
# target groups and none, units, over 15 minutes; random queries (periods, statistics, units,
# labels, dimensions, a metric-math sum), windows and orders.
SAME_METRIC_DATA = """
import datetime, random, sys
sys.path.insert(0, sys.argv[1])
import moto_server
from moto.cloudwatch import models
backend = models.cloudwatch_backends["123456789012"]["us-east-1"]
rng = random.Random(int(sys.argv[2]))
now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
names, spaces = ["RequestCount", "HTTPCode_Target_5XX_Count", "TargetResponseTime"], ["AWS/ApplicationELB", "AWS/VpcLattice"]
dimensions = [[{"Name": "TargetGroup", "Value": f"tg/{i}"}, {"Name": "LoadBalancer", "Value": "lb/1"}] for i in range(3)] + [[]]
for _ in range(1500):
    backend.put_metric_data(rng.choice(spaces), [{
        "MetricName": rng.choice(names), "Dimensions": rng.choice(dimensions), "Value": rng.uniform(0, 50),
        "Timestamp": now - datetime.timedelta(seconds=rng.uniform(0, 900)), "Unit": rng.choice(["Count", "Seconds", "None"])}])
answered = 0
for _ in range(300):
    queries = [{"Id": f"m{i}", "ReturnData": rng.random() < 0.8, "MetricStat": {
        "Metric": {"Namespace": rng.choice(spaces), "MetricName": rng.choice(names), "Dimensions": rng.choice(dimensions)},
        "Period": rng.choice([1, 10, 60, 300]), "Stat": rng.choice(["Sum", "Average", "p99", "SampleCount", "TC(:10)"]),
        **({"Unit": rng.choice(["Count", "Seconds"])} if rng.random() < 0.2 else {})},
        **({"Label": "label"} if rng.random() < 0.2 else {})} for i in range(rng.randint(1, 4))]
    if len(queries) > 1 and rng.random() < 0.5:
        queries.append({"Id": "sum", "Expression": "m0 + m1"})
    start = now - datetime.timedelta(seconds=rng.uniform(0, 1000))
    end = start + datetime.timedelta(seconds=rng.uniform(1.5, 1000))
    order = rng.choice(["TimestampAscending", "TimestampDescending"])
    mine = moto_server._get_metric_data(backend, queries, start, end, order)
    assert mine == moto_server._stock_get_metric_data(backend, queries, start, end, order), queries
    answered += any(result["values"] for result in mine)
print(answered)
"""


@pytest.mark.parametrize("seed", [1, 2])
def test_get_metric_data_in_one_pass_answers_as_moto_computes_it(seed):
    done = subprocess.run([sys.executable, "-c", SAME_METRIC_DATA, str(REPO / "tests/moto"), str(seed)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert int(done.stdout) > 150, "most queries should find data points, or the comparison shows little"


def test_histories_come_in_pages_as_step_functions_gives_them(moto_endpoint):
    """Patch 26: 100 events a page unless asked otherwise (at most 1000), newest first when
    asked, a token while events remain, and a token of another request refused."""
    engine_on(moto_endpoint)
    sfn = boto3.client("stepfunctions", endpoint_url=moto_endpoint, **CREDENTIALS)
    passes = {f"Pass {n}": {"Type": "Pass", "Next": f"Pass {n + 1}"} for n in range(60)}
    passes["Pass 60"] = {"Type": "Pass", "End": True}
    arn = machine(sfn, "pages", passes, "Pass 0")
    execution = sfn.start_execution(stateMachineArn=arn)["executionArn"]
    assert ended(sfn, execution)["status"] == "SUCCEEDED"

    def pages(**params):
        read, token = [], None
        while True:
            page = sfn.get_execution_history(executionArn=execution, **params, **({"nextToken": token} if token else {}))
            read.append([e["id"] for e in page["events"]])
            token = page.get("nextToken")
            if not token:
                return read

    whole = 1 + 2 * 61 + 1  # started, each state entered and exited, succeeded
    assert [len(p) for p in pages()] == [100, whole - 100]
    assert sum(pages(maxResults=1000), []) == list(range(1, whole + 1))
    assert sum(pages(maxResults=7), []) == list(range(1, whole + 1))
    newest_first = pages(maxResults=50, reverseOrder=True)
    assert newest_first[0][:2] == [whole, whole - 1] and sum(newest_first, []) == list(range(whole, 0, -1))
    token = sfn.get_execution_history(executionArn=execution, maxResults=5)["nextToken"]
    for other in ({"reverseOrder": True}, {"executionArn": execution + "x"}):
        with pytest.raises(ClientError) as refused:
            sfn.get_execution_history(**{"executionArn": execution, **other}, nextToken=token)
        assert refused.value.response["Error"]["Code"] in ("InvalidToken", "ExecutionDoesNotExist"), other
    with pytest.raises(ClientError) as refused:
        sfn.get_execution_history(executionArn=execution, nextToken="not a token")
    assert refused.value.response["Error"]["Code"] == "InvalidToken"
    with pytest.raises(ClientError) as refused:
        sfn.get_execution_history(executionArn=execution, maxResults=1001)
    assert refused.value.response["Error"]["Code"] == "ValidationException"


def test_eventbridge_delivers_as_aws_does(moto_endpoint):
    """An event a rule delivers carries its account, a disabled rule delivers nothing (the
    sandbox's alarm events, and the test of a lost one, rely on both), and a schedule rule
    matches no event (the safety net's sweep receives only its own input)."""
    client = lambda service: boto3.client(service, endpoint_url=moto_endpoint, **CREDENTIALS)  # noqa: E731
    sqs, events = client("sqs"), client("events")
    queue = sqs.create_queue(QueueName="delivered")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(Name="alarms", EventPattern='{"source": ["aws.cloudwatch"]}')
    events.put_targets(Rule="alarms", Targets=[{"Id": "q", "Arn": arn}])
    entry = {"Source": "aws.cloudwatch", "DetailType": "CloudWatch Alarm State Change", "Detail": '{"alarmName": "a"}'}

    events.put_events(Entries=[entry])
    [message] = sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=2)["Messages"]
    assert '"account": "123456789012"' in message["Body"]
    sqs.delete_message(QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"])

    events.disable_rule(Name="alarms")
    events.put_events(Entries=[entry])
    assert sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=1).get("Messages", []) == []

    # A schedule rule has no pattern: it fires on its schedule, and matches no event.
    events.put_rule(Name="every-5-minutes", ScheduleExpression="rate(5 minutes)")
    events.put_targets(Rule="every-5-minutes", Targets=[{"Id": "q", "Arn": arn, "Input": '{"operation": "sweep"}'}])
    events.put_events(Entries=[entry])
    assert sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=1).get("Messages", []) == []


def machine(sfn, name, states, start):
    return sfn.create_state_machine(
        name=name, roleArn="arn:aws:iam::123456789012:role/states",
        definition=json.dumps({"StartAt": start, "States": states}))["stateMachineArn"]


def ended(sfn, arn, timeout=30):
    deadline = datetime.datetime.now() + datetime.timedelta(seconds=timeout)
    while datetime.datetime.now() < deadline:
        described = sfn.describe_execution(executionArn=arn)
        if described["status"] != "RUNNING":
            return described
    raise TimeoutError(arn)


def test_child_executions_and_stops_behave_as_aws_documents(moto_endpoint):
    """Patches 14 and 15: `startExecution.sync:2` takes PascalCase parameters and answers
    PascalCase with the child's output parsed; StopExecution keeps its error and cause (and
    leaves out what it was not given); an execution stopped while a Map waits on children ends
    ABORTED."""
    # Step Functions' engine on, as the sandbox turns it on.
    urllib.request.urlopen(urllib.request.Request(
        f"{moto_endpoint}/moto-api/config", data=json.dumps({"stepfunctions": {"execute_state_machine": True}}).encode(),
        headers={"Content-Type": "application/json"})).read()
    sfn = boto3.client("stepfunctions", endpoint_url=moto_endpoint, **CREDENTIALS)
    quick = machine(sfn, "quick", {"Done": {"Type": "Pass", "Result": {"ok": True}, "End": True}}, "Done")
    slow = machine(sfn, "slow", {"Wait": {"Type": "Wait", "Seconds": 60, "End": True}}, "Wait")

    def parent(name, child):
        run = {"Type": "Task", "Resource": "arn:aws:states:::states:startExecution.sync:2",
               "Parameters": {"StateMachineArn": child, "Name.$": "$.name", "Input": {"from": "parent"}}, "End": True}
        return machine(sfn, name, {"Cells": {
            "Type": "Map", "ItemsPath": "$.cells", "MaxConcurrency": 2,
            "ItemSelector": {"name.$": "$$.Map.Item.Value"},
            "ItemProcessor": {"StartAt": "Run", "States": {"Run": run}}, "End": True}}, "Cells")

    done = sfn.start_execution(stateMachineArn=parent("parent-quick", quick),
                               input=json.dumps({"cells": ["a", "b"]}))["executionArn"]
    finished = ended(sfn, done)
    assert finished["status"] == "SUCCEEDED", finished
    outputs = json.loads(finished["output"])
    assert [o["Status"] for o in outputs] == ["SUCCEEDED", "SUCCEEDED"]
    assert outputs[0]["Output"] == {"ok": True} and outputs[0]["Input"] == {"from": "parent"}
    assert isinstance(outputs[0]["StartDate"], int), "epoch milliseconds"

    waiting = sfn.start_execution(stateMachineArn=parent("parent-slow", slow),
                                  input=json.dumps({"cells": ["c", "d"]}))["executionArn"]
    deadline = datetime.datetime.now() + datetime.timedelta(seconds=30)
    while len(sfn.list_executions(stateMachineArn=slow)["executions"]) < 2:
        assert datetime.datetime.now() < deadline, "the children never started"
    sfn.stop_execution(executionArn=waiting, error="Halted", cause="by the test")
    stopped = ended(sfn, waiting)
    assert (stopped["status"], stopped["error"], stopped["cause"]) == ("ABORTED", "Halted", "by the test")
    for child in sfn.list_executions(stateMachineArn=slow)["executions"]:
        sfn.stop_execution(executionArn=child["executionArn"])
        quiet = ended(sfn, child["executionArn"])
        assert quiet["status"] == "ABORTED" and "error" not in quiet and "cause" not in quiet, quiet


def test_a_timed_out_execution_has_its_stop_date(moto_endpoint):
    """Patch 23: an execution past its TimeoutSeconds ends TIMED_OUT with a stopDate, in
    DescribeExecution and ListExecutions alike, as every ended execution has one."""
    engine_on(moto_endpoint)
    sfn = boto3.client("stepfunctions", endpoint_url=moto_endpoint, **CREDENTIALS)
    arn = sfn.create_state_machine(
        name="times-out", roleArn="arn:aws:iam::123456789012:role/states",
        definition=json.dumps({"StartAt": "Wait", "TimeoutSeconds": 1,
                               "States": {"Wait": {"Type": "Wait", "Seconds": 30, "End": True}}}))["stateMachineArn"]
    execution = sfn.start_execution(stateMachineArn=arn)["executionArn"]
    described = ended(sfn, execution)
    assert described["status"] == "TIMED_OUT", described
    assert described["startDate"] < described["stopDate"] <= datetime.datetime.now(datetime.timezone.utc)
    [listed] = sfn.list_executions(stateMachineArn=arn)["executions"]
    assert (listed["status"], listed["stopDate"]) == ("TIMED_OUT", described["stopDate"])


def test_a_stop_during_a_long_task_is_aborted_and_said_at_once(moto_endpoint):
    """Patch 15: StopExecution makes the execution ABORTED, with its stopDate and its status
    change event, at once, as AWS does, not once the task it was in returns (moto's engine said
    so only then: a shift-weights call's whole run later). The task here is a 10 s long poll."""
    engine_on(moto_endpoint)
    client = lambda service: boto3.client(service, endpoint_url=moto_endpoint, **CREDENTIALS)  # noqa: E731
    sfn, sqs, events = client("stepfunctions"), client("sqs"), client("events")
    idle = sqs.create_queue(QueueName="idle")["QueueUrl"]
    told = sqs.create_queue(QueueName="told")["QueueUrl"]
    told_arn = sqs.get_queue_attributes(QueueUrl=told, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(Name="execution-ends", EventPattern='{"source": ["aws.states"]}')
    events.put_targets(Rule="execution-ends", Targets=[{"Id": "q", "Arn": told_arn}])
    long_poll = {"Type": "Task", "Resource": "arn:aws:states:::aws-sdk:sqs:receiveMessage",
                 "Parameters": {"QueueUrl": idle, "WaitTimeSeconds": 10}, "End": True}
    arn = sfn.start_execution(stateMachineArn=machine(sfn, "long-task", {"Poll": long_poll}, "Poll"))["executionArn"]
    deadline = time.monotonic() + 30
    while not any(e["type"] == "TaskScheduled" for e in sfn.get_execution_history(executionArn=arn)["events"]):
        assert time.monotonic() < deadline, "the task never started"
        time.sleep(0.1)

    stopped_at = sfn.stop_execution(executionArn=arn, error="Halted", cause="by the test")["stopDate"]
    described = sfn.describe_execution(executionArn=arn)
    assert (described["status"], described["stopDate"]) == ("ABORTED", stopped_at), described
    # The long poll is still running: the event must not wait for it (at most 5 s here).
    [message] = sqs.receive_message(QueueUrl=told, WaitTimeSeconds=5)["Messages"]
    detail = json.loads(message["Body"])["detail"]
    assert (detail["status"], detail["error"], detail["cause"]) == ("ABORTED", "Halted", "by the test")
    sqs.delete_message(QueueUrl=told, ReceiptHandle=message["ReceiptHandle"])
    # When the task returns, the execution keeps its stop and no second event is put.
    assert sqs.receive_message(QueueUrl=told, WaitTimeSeconds=12).get("Messages", []) == []
    later = sfn.describe_execution(executionArn=arn)
    assert (later["status"], later["stopDate"], later["error"]) == ("ABORTED", stopped_at, "Halted")


def test_executions_of_one_definition_keep_their_own_retries_and_histories_read_as_aws_gives_them(moto_endpoint):
    """Patches 26 and 27: two executions of one definition at once (its parse shared) each retry
    their own task; each history reads as Step Functions' JSON (ids in order, timestamps as
    dates, no null members), and an unknown execution is still refused."""
    engine_on(moto_endpoint)
    sfn = boto3.client("stepfunctions", endpoint_url=moto_endpoint, **CREDENTIALS)
    missing = {"Type": "Task", "Resource": "arn:aws:states:::aws-sdk:sqs:getQueueUrl",
               "Parameters": {"QueueName": "no-such-queue"},
               "Retry": [{"ErrorEquals": ["States.ALL"], "MaxAttempts": 2, "IntervalSeconds": 1, "BackoffRate": 1}],
               "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Gave up"}], "End": True}
    arn = machine(sfn, "retries", {"Ask": missing, "Gave up": {"Type": "Pass", "End": True}}, "Ask")
    executions = [sfn.start_execution(stateMachineArn=arn)["executionArn"] for _ in range(2)]
    for execution in executions:
        assert ended(sfn, execution)["status"] == "SUCCEEDED"
        events = sfn.get_execution_history(executionArn=execution)["events"]
        assert [e["id"] for e in events] == list(range(1, len(events) + 1))
        assert all(isinstance(e["timestamp"], datetime.datetime) for e in events), events
        assert [e["timestamp"] for e in events] == sorted(e["timestamp"] for e in events)
        assert sum(e["type"] == "TaskScheduled" for e in events) == 3, [e["type"] for e in events]
        assert events[-1]["type"] == "ExecutionSucceeded"
    with pytest.raises(sfn.exceptions.ExecutionDoesNotExist):
        sfn.get_execution_history(executionArn=executions[0].rsplit(":", 1)[0] + ":no-such-execution")


def engine_on(moto_endpoint):
    """Step Functions' engine on, as the sandbox turns it on."""
    urllib.request.urlopen(urllib.request.Request(
        f"{moto_endpoint}/moto-api/config", data=json.dumps({"stepfunctions": {"execute_state_machine": True}}).encode(),
        headers={"Content-Type": "application/json"})).read()


def test_a_task_token_is_answered_once_and_only_while_its_execution_runs(moto_endpoint):
    """Patch 5: a failure for a token already answered, or whose execution ended, is AWS's
    TaskDoesNotExist (moto took both as delivered)."""
    engine_on(moto_endpoint)
    sfn = boto3.client("stepfunctions", endpoint_url=moto_endpoint, **CREDENTIALS)
    sqs = boto3.client("sqs", endpoint_url=moto_endpoint, **CREDENTIALS)
    queue = sqs.create_queue(QueueName="tokens")["QueueUrl"]
    wait = {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
            "Parameters": {"QueueUrl": queue, "MessageBody": {"token.$": "$$.Task.Token"}}, "End": True}
    # In a branch, as the rollout's approvals wait (patch 3 ends such a wait when it is stopped).
    waits = machine(sfn, "waits", {"Both": {"Type": "Parallel", "End": True, "Branches": [
        {"StartAt": "Wait", "States": {"Wait": wait}}]}}, "Both")

    def token_of_a_waiting_execution(name):
        arn = sfn.start_execution(stateMachineArn=waits, name=name)["executionArn"]
        for _ in range(30):
            messages = sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=1).get("Messages", [])
            if messages:
                sqs.delete_message(QueueUrl=queue, ReceiptHandle=messages[0]["ReceiptHandle"])
                return arn, json.loads(messages[0]["Body"])["token"]
        raise TimeoutError(arn)

    def refused(token):
        with pytest.raises(ClientError) as error:
            sfn.send_task_failure(taskToken=token, error="Rejected", cause="again")
        return error.value.response["Error"]["Code"]

    answered, token = token_of_a_waiting_execution("answered")
    sfn.send_task_failure(taskToken=token, error="Rejected", cause="no")
    assert (ended(sfn, answered)["status"], ended(sfn, answered)["error"]) == ("FAILED", "Rejected")
    assert refused(token) == "TaskDoesNotExist"

    stopped, token = token_of_a_waiting_execution("stopped")
    sfn.stop_execution(executionArn=stopped)
    assert ended(sfn, stopped)["status"] == "ABORTED"
    assert refused(token) == "TaskDoesNotExist"
    assert refused("not-a-token") == "InvalidToken"


def test_a_token_of_a_branch_its_parallel_ended_is_no_task_any_more(moto_endpoint):
    """Patch 5 with 14: one branch waits on a task token (as a bake's alarm watch does), the other
    fails, and the Parallel's Catch goes on (as to a rollback's Restore). A failure sent for the
    waiting branch's token afterwards is AWS's TaskDoesNotExist, and the history records no
    TaskFailed for it (moto took it as delivered and recorded it during the Restore)."""
    engine_on(moto_endpoint)
    sfn = boto3.client("stepfunctions", endpoint_url=moto_endpoint, **CREDENTIALS)
    sqs = boto3.client("sqs", endpoint_url=moto_endpoint, **CREDENTIALS)
    queue = sqs.create_queue(QueueName="watch-tokens")["QueueUrl"]
    watch = {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
             "Parameters": {"QueueUrl": queue, "MessageBody": {"token.$": "$$.Task.Token"}}, "End": True}
    bake = {"StartAt": "Nap", "States": {"Nap": {"Type": "Wait", "Seconds": 2, "Next": "Failed"},
                                          "Failed": {"Type": "Fail", "Error": "CheckFailed"}}}
    states = {"Bake": {"Type": "Parallel", "Branches": [bake, {"StartAt": "Watch", "States": {"Watch": watch}}],
                       "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Restore"}], "End": True},
              "Restore": {"Type": "Wait", "Seconds": 8, "End": True}}
    arn = sfn.start_execution(stateMachineArn=machine(sfn, "branch-tokens", states, "Bake"))["executionArn"]
    [message] = sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=10)["Messages"]
    token = json.loads(message["Body"])["token"]
    deadline = time.monotonic() + 30
    while not any(e["type"] == "WaitStateEntered" and e["stateEnteredEventDetails"]["name"] == "Restore"
                  for e in sfn.get_execution_history(executionArn=arn)["events"]):
        assert time.monotonic() < deadline, "the Parallel never failed into Restore"
        time.sleep(0.2)
    with pytest.raises(ClientError) as error:
        sfn.send_task_failure(taskToken=token, error="AlarmFired", cause="late")
    assert error.value.response["Error"]["Code"] == "TaskDoesNotExist"
    assert ended(sfn, arn)["status"] == "SUCCEEDED"
    kinds = [e["type"] for e in sfn.get_execution_history(executionArn=arn)["events"]]
    assert "TaskFailed" not in kinds, kinds


def test_the_payload_limit_is_262144_bytes_of_compact_utf8(moto_endpoint):
    """Patch 16: a state's data is held to 262,144 bytes as compact UTF-8 JSON, the limit
    itself allowed (moto counted `", "` separators and `\\u` escapes, and refused the limit), and a
    task's input is held to it when the task is scheduled."""
    engine_on(moto_endpoint)
    sfn = boto3.client("stepfunctions", endpoint_url=moto_endpoint, **CREDENTIALS)
    passes = machine(sfn, "passes", {"Keep": {"Type": "Pass", "End": True}}, "Keep")

    def of_size(size):
        """Compact JSON of `size` UTF-8 bytes, with separators and non-ASCII text to count."""
        data = {"names": ["é" * 1000, "ü" * 1000], "padding": ""}
        data["padding"] = "x" * (size - len(json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()))
        text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
        assert len(text.encode()) == size
        return text

    at_the_limit = sfn.start_execution(stateMachineArn=passes, name="at", input=of_size(262_144))["executionArn"]
    assert ended(sfn, at_the_limit)["status"] == "SUCCEEDED"
    over = sfn.start_execution(stateMachineArn=passes, name="over", input=of_size(262_145))["executionArn"]
    assert (ended(sfn, over)["status"], ended(sfn, over)["error"]) == ("FAILED", "States.DataLimitExceeded")

    # A task whose Parameters add to an input at the limit: refused as it is scheduled.
    sqs = boto3.client("sqs", endpoint_url=moto_endpoint, **CREDENTIALS)
    queue = sqs.create_queue(QueueName="grown")["QueueUrl"]
    grows = machine(sfn, "grows", {"Send": {
        "Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage",
        "Parameters": {"QueueUrl": queue, "MessageBody.$": "$"}, "End": True}}, "Send")
    grown = sfn.start_execution(stateMachineArn=grows, name="grown", input=of_size(262_144))["executionArn"]
    assert (ended(sfn, grown)["status"], ended(sfn, grown)["error"]) == ("FAILED", "States.DataLimitExceeded")
    assert "Messages" not in sqs.receive_message(QueueUrl=queue), "the task never ran"


# A Change Calendar as AWS's documentation shows one (`aws ssm create-document --document-type
# ChangeCalendar --document-format TEXT`): the console's header, a to-do, and an event in the
# calendar's own time zone.
HOLIDAY_FREEZE = """BEGIN:VCALENDAR
PRODID:-//AWS//Change Calendar 1.0//EN
VERSION:2.0
X-CALENDAR-TYPE:DEFAULT_OPEN
X-WR-CALDESC:holiday freeze
X-CALENDAR-CMEVENTS:DISABLED
X-WR-TIMEZONE:America/Los_Angeles
BEGIN:VTODO
DTSTAMP:20200320T004207Z
UID:3b5af39a-d0b3-4049-a839-d7bb8af01f92
SUMMARY:Add events to this calendar.
END:VTODO
BEGIN:VEVENT
DTSTAMP:20261120T182543Z
UID:7e3d8c4a-1b2f-4c5d-9e6f-0a1b2c3d4e5f
DTSTART;TZID=America/Los_Angeles:20261224T000000
DTEND;TZID=America/Los_Angeles:20261227T000000
SUMMARY:Holiday freeze
END:VEVENT
END:VCALENDAR
"""


def test_change_calendars_are_evaluated_as_ssm_does(moto_endpoint):
    ssm = boto3.client("ssm", endpoint_url=moto_endpoint, **CREDENTIALS)
    ssm.create_document(Name="holiday-freeze", Content=HOLIDAY_FREEZE, DocumentType="ChangeCalendar",
                        DocumentFormat="TEXT")
    # The same event in a DEFAULT_CLOSED calendar is a change window: open only during it.
    ssm.create_document(Name="change-window", DocumentType="ChangeCalendar", DocumentFormat="TEXT",
                        Content=HOLIDAY_FREEZE.replace("DEFAULT_OPEN", "DEFAULT_CLOSED"))

    def state(names, at):
        answer = ssm.get_calendar_state(CalendarNames=names, AtTime=at)
        return answer["State"], answer.get("NextTransitionTime")

    # 24 Dec 00:00 in Los Angeles is 08:00 UTC.
    assert state(["holiday-freeze"], "2026-12-24T07:59:00Z") == ("OPEN", "2026-12-24T08:00:00Z")
    assert state(["holiday-freeze"], "2026-12-24T08:00:00Z") == ("CLOSED", "2026-12-27T08:00:00Z")
    assert state(["holiday-freeze"], "2026-12-27T08:00:00Z") == ("OPEN", None)
    assert state(["change-window"], "2026-12-25T12:00:00Z")[0] == "OPEN"
    assert state(["change-window"], "2026-12-28T12:00:00Z")[0] == "CLOSED"
    # Several calendars: CLOSED when any is; by ARN as by name.
    arn = "arn:aws:ssm:us-east-1:123456789012:document/holiday-freeze"
    assert state([arn, "change-window"], "2026-12-25T12:00:00Z")[0] == "CLOSED"
    assert state([arn, "change-window"], "2026-12-20T12:00:00Z")[0] == "CLOSED"

    with pytest.raises(ClientError) as missing:
        ssm.get_calendar_state(CalendarNames=["no-such-calendar"])
    assert missing.value.response["Error"]["Code"] == "InvalidDocument"
    ssm.create_document(Name="not-a-calendar", DocumentType="Command", DocumentFormat="JSON", Content=json.dumps(
        {"schemaVersion": "2.2", "mainSteps": [{"action": "aws:runShellScript", "name": "x",
                                                 "inputs": {"runCommand": ["true"]}}]}))
    with pytest.raises(ClientError) as other_type:
        ssm.get_calendar_state(CalendarNames=["not-a-calendar"])
    assert other_type.value.response["Error"]["Code"] == "InvalidDocumentType"
    with pytest.raises(ClientError) as not_ical:
        ssm.create_document(Name="broken", Content="no calendar here", DocumentType="ChangeCalendar",
                            DocumentFormat="TEXT")
    assert not_ical.value.response["Error"]["Code"] == "InvalidDocumentContent"


def harness_eks(endpoint, cluster, what, body):
    """The harness's own control of what EKS computes (not AWS's API)."""
    sent = urllib.request.Request(f"{endpoint}/_harness/eks/123456789012/us-east-1/clusters/{cluster}/{what}",
                                  data=json.dumps(body).encode(), method="POST",
                                  headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(sent) as answer:
        return json.load(answer)


def test_eks_insights_and_add_ons_answer_as_eks_documents(moto_endpoint):
    """Shapes, statuses, filters, pagination and errors of ListInsights, DescribeInsight,
    CreateAddon, ListAddons, DescribeAddon and DeleteAddon (the API reference's examples)."""
    eks = boto3.client("eks", endpoint_url=moto_endpoint, **CREDENTIALS)
    ec2 = boto3.client("ec2", endpoint_url=moto_endpoint, **CREDENTIALS)
    vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.9.1.0/24")["Subnet"]["SubnetId"]
    eks.create_cluster(name="insightful", roleArn="arn:aws:iam::123456789012:role/eks",
                       resourcesVpcConfig={"subnetIds": [subnet]})
    assert eks.list_insights(clusterName="insightful")["insights"] == []
    deprecated = {
        "id": "00000000-0000-0000-0000-000000000001", "name": "Deprecated APIs removed in Kubernetes v1.32",
        "category": "UPGRADE_READINESS", "description": "Checks for usage of deprecated APIs",
        "insightStatus": {"status": "ERROR", "reason": "Deprecated API usage detected within last 30 days"},
        "recommendation": "Update manifests and API clients to use newer Kubernetes APIs",
        "additionalInfo": {"EKS update cluster documentation": "https://docs.aws.amazon.com/eks/latest/userguide/update-cluster.html"},
    }
    harness_eks(moto_endpoint, "insightful", "insights", deprecated)
    harness_eks(moto_endpoint, "insightful", "insights", {
        "id": "00000000-0000-0000-0000-000000000002", "name": "Cluster health issues", "category": "MISCONFIGURATION",
        "insightStatus": {"status": "PASSING", "reason": "No issues"}})
    listed = eks.list_insights(clusterName="insightful")["insights"]
    assert [i["id"] for i in listed] == ["00000000-0000-0000-0000-000000000001", "00000000-0000-0000-0000-000000000002"]
    assert set(listed[0]) == {"id", "name", "category", "kubernetesVersion", "lastRefreshTime", "lastTransitionTime",
                              "description", "insightStatus"}, "a summary: no recommendation"
    erroring = eks.list_insights(clusterName="insightful", filter={"statuses": ["ERROR", "WARNING"]})["insights"]
    assert [i["name"] for i in erroring] == ["Deprecated APIs removed in Kubernetes v1.32"]
    first = eks.list_insights(clusterName="insightful", maxResults=1)
    second = eks.list_insights(clusterName="insightful", maxResults=1, nextToken=first["nextToken"])
    assert [i["id"][-1] for i in first["insights"] + second["insights"]] == ["1", "2"] and "nextToken" not in second
    insight = eks.describe_insight(clusterName="insightful", id=deprecated["id"])["insight"]
    assert insight["recommendation"] == deprecated["recommendation"]
    assert insight["insightStatus"] == {"status": "ERROR", "reason": "Deprecated API usage detected within last 30 days"}
    for call, code, message in (
            (lambda: eks.describe_insight(clusterName="insightful", id="nope"), "ResourceNotFoundException",
             "No insight found with id nope for cluster insightful"),
            (lambda: eks.list_insights(clusterName="absent"), "ResourceNotFoundException", None),
            (lambda: eks.list_insights(clusterName="insightful", maxResults=101), "InvalidParameterException",
             "maxResults must be between 1 and 100")):
        with pytest.raises(ClientError) as refused:
            call()
        assert refused.value.response["Error"]["Code"] == code, refused.value.response
        if message:
            assert refused.value.response["Error"]["Message"] == message

    created = eks.create_addon(clusterName="insightful", addonName="coredns", addonVersion="v1.11.4-eksbuild.2")["addon"]
    assert (created["status"], created["addonVersion"]) == ("CREATING", "v1.11.4-eksbuild.2")
    assert created["addonArn"].startswith("arn:aws:eks:us-east-1:123456789012:addon/insightful/coredns/")
    with pytest.raises(ClientError) as refused:
        eks.create_addon(clusterName="insightful", addonName="coredns")
    assert refused.value.response["Error"]["Code"] == "ResourceInUseException"
    eks.create_addon(clusterName="insightful", addonName="vpc-cni")
    assert eks.list_addons(clusterName="insightful")["addons"] == ["coredns", "vpc-cni"]
    time.sleep(1)
    assert eks.describe_addon(clusterName="insightful", addonName="coredns")["addon"]["status"] == "ACTIVE"
    issue = {"code": "InsufficientNumberOfReplicas", "message": "The add-on is unhealthy because it doesn't have "
             "the desired number of replicas.", "resourceIds": ["kube-system/coredns"]}
    harness_eks(moto_endpoint, "insightful", "addons/coredns/health", {"status": "DEGRADED", "issues": [issue]})
    degraded = eks.describe_addon(clusterName="insightful", addonName="coredns")["addon"]
    assert (degraded["status"], degraded["health"]) == ("DEGRADED", {"issues": [issue]})
    with pytest.raises(ClientError) as refused:
        eks.describe_addon(clusterName="insightful", addonName="aws-ebs-csi-driver")
    assert refused.value.response["Error"]["Message"] == "No addon: aws-ebs-csi-driver found in cluster: insightful"
    eks.delete_addon(clusterName="insightful", addonName="vpc-cni")
    assert eks.list_addons(clusterName="insightful")["addons"] == ["coredns"]


def harness_ga(endpoint, control):
    request = urllib.request.Request(f"{endpoint}/_harness/globalaccelerator/123456789012",
                                     data=json.dumps(control).encode(), method="POST")
    with urllib.request.urlopen(request) as answer:
        return json.loads(answer.read())


def refused_with(call):
    with pytest.raises(ClientError) as refused:
        call()
    error = refused.value.response["Error"]
    return error["Code"], error["Message"]


def test_global_accelerator_answers_as_its_api_reference_documents(moto_endpoint):
    """Accelerators, listeners and endpoint groups over the wire (botocore's client, JSON 1.1 in
    us-west-2): the API reference's shapes, defaults, limits and errors, an UpdateEndpointGroup
    that replaces the whole list, IN_PROGRESS then DEPLOYED after a write, a transaction in
    progress refused where the reference lists it."""
    harness_ga(moto_endpoint, {"deploySeconds": 1, "transactionSeconds": 0.5})
    ga = boto3.client("globalaccelerator", endpoint_url=moto_endpoint,
                      **{**CREDENTIALS, "region_name": "us-west-2"})
    balancers = {}
    for region in ("us-east-1", "eu-west-1"):
        ec2 = boto3.client("ec2", endpoint_url=moto_endpoint, **{**CREDENTIALS, "region_name": region})
        vpc = ec2.create_vpc(CidrBlock="10.7.0.0/16")["Vpc"]["VpcId"]
        subnets = [ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.7.{i}.0/24", AvailabilityZone=f"{region}{zone}")
                   ["Subnet"]["SubnetId"] for i, zone in ((1, "a"), (2, "b"))]
        elbv2 = boto3.client("elbv2", endpoint_url=moto_endpoint, **{**CREDENTIALS, "region_name": region})
        balancers[region] = [elbv2.create_load_balancer(Name=f"{name}-{region}", Subnets=subnets)
                             ["LoadBalancers"][0]["LoadBalancerArn"] for name in ("blue", "green")]
    blue, green = balancers["us-east-1"]

    accelerator = ga.create_accelerator(Name="web", IdempotencyToken="1")["Accelerator"]
    assert accelerator["AcceleratorArn"].startswith("arn:aws:globalaccelerator::123456789012:accelerator/")
    assert (accelerator["Status"], accelerator["Enabled"], accelerator["IpAddressType"]) == ("IN_PROGRESS", True, "IPV4")
    assert accelerator["DnsName"].endswith(".awsglobalaccelerator.com") and len(accelerator["IpSets"][0]["IpAddresses"]) == 2
    arn = accelerator["AcceleratorArn"]
    listener = ga.create_listener(AcceleratorArn=arn, PortRanges=[{"FromPort": 443, "ToPort": 443}], Protocol="TCP",
                                  IdempotencyToken="2")["Listener"]
    assert listener["ClientAffinity"] == "NONE" and listener["ListenerArn"].startswith(f"{arn}/listener/")
    other = ga.create_listener(AcceleratorArn=arn, PortRanges=[{"FromPort": 8000, "ToPort": 8100}], Protocol="TCP",
                               IdempotencyToken="2b")["Listener"]["ListenerArn"]
    for call in (lambda: ga.create_listener(AcceleratorArn=arn, PortRanges=[{"FromPort": 8080, "ToPort": 8080}],
                                            Protocol="TCP", IdempotencyToken="2c"),
                 lambda: ga.update_listener(ListenerArn=other, PortRanges=[{"FromPort": 440, "ToPort": 450}])):
        assert refused_with(call)[0] == "InvalidPortRangeException"
    ga.delete_listener(ListenerArn=other)
    group = ga.create_endpoint_group(
        ListenerArn=listener["ListenerArn"], EndpointGroupRegion="us-east-1", IdempotencyToken="3",
        EndpointConfigurations=[{"EndpointId": blue, "Weight": 255}, {"EndpointId": green, "Weight": 0}])["EndpointGroup"]
    assert group["EndpointGroupArn"].startswith(f"{listener['ListenerArn']}/endpoint-group/")
    assert (group["TrafficDialPercentage"], group["HealthCheckProtocol"], group["HealthCheckIntervalSeconds"],
            group["ThresholdCount"], group["HealthCheckPort"]) == (100.0, "TCP", 30, 3, 443)
    assert [(e["EndpointId"], e["Weight"], e["HealthState"]) for e in group["EndpointDescriptions"]] == [
        (blue, 255, "INITIAL"), (green, 0, "INITIAL")]
    group_arn = group["EndpointGroupArn"]
    assert refused_with(lambda: ga.create_endpoint_group(
        ListenerArn=listener["ListenerArn"], EndpointGroupRegion="us-east-1", IdempotencyToken="4"))[0] == \
        "EndpointGroupAlreadyExistsException"

    # What the model refuses, in the front end's words; what the service refuses, by name.
    assert refused_with(lambda: ga.update_endpoint_group(
        EndpointGroupArn=group_arn, EndpointConfigurations=[{"EndpointId": blue, "Weight": 256}])) == (
        "ValidationException", "1 validation error detected: Value '256' at 'endpointConfigurations.1.member.weight' "
                               "failed to satisfy constraint: Member must have value less than or equal to 255")
    assert refused_with(lambda: ga.update_endpoint_group(EndpointGroupArn=group_arn, TrafficDialPercentage=100.5))[1] \
        .endswith("Member must have value less than or equal to 100")
    eleven = [{"EndpointId": f"eipalloc-{i:08x}"} for i in range(11)]
    assert refused_with(lambda: ga.update_endpoint_group(EndpointGroupArn=group_arn, EndpointConfigurations=eleven))[1] \
        .endswith("Member must have length less than or equal to 10")
    for endpoint, said in ((balancers["eu-west-1"][0], "is not in the endpoint group's Region us-east-1"),
                           (blue.replace("/blue-", "/gone-"), "is not a valid, active resource"),
                           ("sg-12345678", "is not a load balancer ARN")):
        code, message = refused_with(lambda: ga.update_endpoint_group(
            EndpointGroupArn=group_arn, EndpointConfigurations=[{"EndpointId": endpoint}]))
        assert code == "InvalidArgumentException" and said in message, (code, message)
    assert refused_with(lambda: ga.update_endpoint_group(EndpointGroupArn=group_arn, HealthCheckIntervalSeconds=20))[0] \
        == "InvalidArgumentException"
    assert refused_with(lambda: ga.describe_endpoint_group(EndpointGroupArn=group_arn + "0"))[0] == \
        "EndpointGroupNotFoundException"
    assert [e["Weight"] for e in ga.describe_endpoint_group(EndpointGroupArn=group_arn)["EndpointGroup"]
            ["EndpointDescriptions"]] == [255, 0], "nothing refused changed anything"

    # A write's transaction: AddEndpoints (whose reference lists TransactionInProgressException)
    # refused while it runs; UpdateEndpointGroup (whose reference does not) never.
    ga.update_endpoint_group(EndpointGroupArn=group_arn, EndpointConfigurations=[
        {"EndpointId": blue, "Weight": 128}, {"EndpointId": green, "Weight": 128}])
    assert refused_with(lambda: ga.add_endpoints(EndpointGroupArn=group_arn, EndpointConfigurations=[
        {"EndpointId": "eipalloc-0123abcd"}]))[0] == "TransactionInProgressException"
    ga.update_endpoint_group(EndpointGroupArn=group_arn, TrafficDialPercentage=50)
    assert ga.describe_accelerator(AcceleratorArn=arn)["Accelerator"]["Status"] == "IN_PROGRESS"
    time.sleep(1.1)
    deployed = ga.describe_endpoint_group(EndpointGroupArn=group_arn)["EndpointGroup"]
    assert ga.describe_accelerator(AcceleratorArn=arn)["Accelerator"]["Status"] == "DEPLOYED"
    assert deployed["TrafficDialPercentage"] == 50.0
    assert [(e["Weight"], e["HealthState"]) for e in deployed["EndpointDescriptions"]] == [(128, "HEALTHY")] * 2
    # The whole list: what an update does not name is no longer an endpoint.
    ga.update_endpoint_group(EndpointGroupArn=group_arn, EndpointConfigurations=[{"EndpointId": green}])
    assert [(e["EndpointId"], e["Weight"]) for e in ga.describe_endpoint_group(EndpointGroupArn=group_arn)
            ["EndpointGroup"]["EndpointDescriptions"]] == [(green, 128)]

    # Stuck IN_PROGRESS; an endpoint forced unhealthy; deletes in the documented order.
    harness_ga(moto_endpoint, {"deploySeconds": 3600, "transactionSeconds": 0, "health": {green: "UNHEALTHY"}})
    time.sleep(0.6)  # the last write's transaction
    ga.update_accelerator(AcceleratorArn=arn, Enabled=False)
    assert ga.describe_accelerator(AcceleratorArn=arn)["Accelerator"]["Status"] == "IN_PROGRESS"
    assert refused_with(lambda: ga.delete_accelerator(AcceleratorArn=arn))[0] == "AssociatedListenerFoundException"
    assert refused_with(lambda: ga.delete_listener(ListenerArn=listener["ListenerArn"]))[0] == \
        "AssociatedEndpointGroupFoundException"
    harness_ga(moto_endpoint, {"deploySeconds": 0})
    ga.update_endpoint_group(EndpointGroupArn=group_arn)
    assert ga.describe_endpoint_group(EndpointGroupArn=group_arn)["EndpointGroup"]["EndpointDescriptions"][0][
        "HealthState"] == "UNHEALTHY"
    ga.delete_endpoint_group(EndpointGroupArn=group_arn)
    ga.delete_listener(ListenerArn=listener["ListenerArn"])
    ga.delete_accelerator(AcceleratorArn=arn)
    assert ga.list_accelerators()["Accelerators"] == []

    # The API lives in us-west-2: a request signed for another Region is refused.
    elsewhere = boto3.client("globalaccelerator", endpoint_url=moto_endpoint, **CREDENTIALS)
    code, message = refused_with(lambda: elsewhere.list_accelerators())
    assert code == "InvalidSignatureException" and "Credential should be scoped to a valid region" in message


def test_network_load_balancers_and_forward_actions_are_checked_as_elb_checks_them(moto_endpoint):
    """An NLB's ARNs name it `net/`; a forward action's weights are 0-999 on every write that
    carries one; an NLB forwards to target groups of one network protocol, without target group
    stickiness, and its listeners have no rules. An ALB keeps what it may; its rules' conditions
    are counted and checked as ELB checks them."""
    elbv2 = boto3.client("elbv2", endpoint_url=moto_endpoint, **CREDENTIALS)
    ec2 = boto3.client("ec2", endpoint_url=moto_endpoint, **CREDENTIALS)
    vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    subnets = [ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.9.{i}.0/24", AvailabilityZone=f"us-east-1{zone}")
               ["Subnet"]["SubnetId"] for i, zone in ((1, "a"), (2, "b"))]
    nlb = elbv2.create_load_balancer(Name="tcp", Subnets=subnets, Type="network",
                                     Tags=[{"Key": "team", "Value": "edge"}])["LoadBalancers"][0]
    assert ":loadbalancer/net/tcp/" in nlb["LoadBalancerArn"] and nlb["Type"] == "network"
    assert elbv2.describe_load_balancers(LoadBalancerArns=[nlb["LoadBalancerArn"]])["LoadBalancers"][0]["LoadBalancerName"] == "tcp"
    tags = elbv2.describe_tags(ResourceArns=[nlb["LoadBalancerArn"]])["TagDescriptions"][0]["Tags"]
    assert tags == [{"Key": "team", "Value": "edge"}]

    def group(name, protocol, port=443):
        return elbv2.create_target_group(Name=name, Protocol=protocol, Port=port, VpcId=vpc,
                                         TargetType="ip")["TargetGroups"][0]["TargetGroupArn"]

    blue, green, udp, http = group("blue", "TCP"), group("green", "TCP"), group("dns", "UDP", 53), group("web", "HTTP", 80)

    def forward(*weighted, sticky=None):
        config = {"TargetGroups": [{"TargetGroupArn": arn, "Weight": weight} for arn, weight in weighted]}
        if sticky is not None:
            config["TargetGroupStickinessConfig"] = {"Enabled": sticky, "DurationSeconds": 60}
        return [{"Type": "forward", "ForwardConfig": config}]

    listener = elbv2.create_listener(LoadBalancerArn=nlb["LoadBalancerArn"], Protocol="TCP", Port=443,
                                     DefaultActions=forward((blue, 999), (green, 0)))["Listeners"][0]["ListenerArn"]
    assert ":listener/net/tcp/" in listener
    elbv2.modify_listener(ListenerArn=listener, DefaultActions=forward((blue, 90), (green, 10)))
    weights = elbv2.describe_listeners(ListenerArns=[listener])["Listeners"][0]["DefaultActions"][0]["ForwardConfig"]["TargetGroups"]
    assert [(w["TargetGroupArn"], w["Weight"]) for w in weights] == [(blue, 90), (green, 10)]

    code, message = refused_with(lambda: elbv2.modify_listener(ListenerArn=listener, DefaultActions=forward((blue, 1000), (green, 0))))
    assert code == "ValidationError" and "less than or equal to 999" in message
    code, message = refused_with(lambda: elbv2.modify_listener(ListenerArn=listener, DefaultActions=forward((blue, 50), (udp, 50))))
    assert code == "InvalidConfigurationRequest" and "same protocol" in message
    code, message = refused_with(lambda: elbv2.modify_listener(ListenerArn=listener, DefaultActions=forward((blue, 50), (http, 50))))
    assert code == "InvalidConfigurationRequest" and "HTTP" in message
    code, message = refused_with(lambda: elbv2.modify_listener(ListenerArn=listener, DefaultActions=forward((blue, 50), (green, 50), sticky=True)))
    assert code == "InvalidConfigurationRequest" and "stickiness" in message
    missing = blue.replace("blue", "gone")
    assert refused_with(lambda: elbv2.modify_listener(ListenerArn=listener, DefaultActions=forward((missing, 1))))[0] == "TargetGroupNotFound"
    code, message = refused_with(lambda: elbv2.create_rule(ListenerArn=listener, Priority=1, Actions=forward((blue, 1)),
                                                           Conditions=[{"Field": "path-pattern", "Values": ["/x"]}]))
    assert code == "InvalidLoadBalancerAction" and "network" in message
    weights = elbv2.describe_listeners(ListenerArns=[listener])["Listeners"][0]["DefaultActions"][0]["ForwardConfig"]["TargetGroups"]
    assert [(w["TargetGroupArn"], w["Weight"]) for w in weights] == [(blue, 90), (green, 10)], "a refused write changed nothing"

    alb = elbv2.create_load_balancer(Name="web", Subnets=subnets)["LoadBalancers"][0]["LoadBalancerArn"]
    assert ":loadbalancer/app/web/" in alb
    web2 = group("web2", "HTTP", 80)
    alb_listener = elbv2.create_listener(LoadBalancerArn=alb, Protocol="HTTP", Port=80,
                                         DefaultActions=forward((http, 999), (web2, 1), sticky=True))["Listeners"][0]["ListenerArn"]
    rule = elbv2.create_rule(ListenerArn=alb_listener, Priority=1, Actions=forward((http, 1)),
                             Conditions=[{"Field": "path-pattern", "Values": ["/x"]}])["Rules"][0]["RuleArn"]
    assert refused_with(lambda: elbv2.modify_rule(RuleArn=rule, Actions=forward((http, 1000))))[0] == "ValidationError"
    assert refused_with(lambda: elbv2.create_listener(LoadBalancerArn=alb, Protocol="HTTP", Port=81,
                                                      DefaultActions=forward((blue, 1))))[0] == "InvalidConfigurationRequest"


    # A rule's conditions as ELB counts them (what issue 70's test stage writes): a header named
    # as a token, one path pattern, at most five values, a priority once per listener.
    def header(name, *values):
        return {"Field": "http-header", "HttpHeaderConfig": {"HttpHeaderName": name, "Values": list(values)}}

    def path(*values):
        return {"Field": "path-pattern", "PathPatternConfig": {"Values": list(values)}}

    test_rule = elbv2.create_rule(ListenerArn=alb_listener, Priority=2, Actions=forward((web2, 1)),
                                  Conditions=[header("x-canary", "green"), header("X-Team", "a", "b"),
                                              path("/api/*", "/v2/*")])["Rules"][0]["RuleArn"]
    refusals = [
        (lambda: elbv2.create_rule(ListenerArn=alb_listener, Priority=3, Actions=forward((web2, 1)),
                                   Conditions=[header("x canary", "green")]), "not valid"),
        (lambda: elbv2.create_rule(ListenerArn=alb_listener, Priority=3, Actions=forward((web2, 1)),
                                   Conditions=[header("x-canary:", "green")]), "not valid"),
        (lambda: elbv2.create_rule(ListenerArn=alb_listener, Priority=3, Actions=forward((web2, 1)),
                                   Conditions=[path("/a"), path("/b")]), "only have one 'path-pattern'"),
        (lambda: elbv2.create_rule(ListenerArn=alb_listener, Priority=3, Actions=forward((web2, 1)),
                                   Conditions=[header("x-canary", "a", "b", "c"), path("/a", "/b", "/c")]),
         "these conditions have 6"),
        (lambda: elbv2.modify_rule(RuleArn=test_rule, Conditions=[
            header("x-canary", "green"), {"Field": "query-string", "QueryStringConfig": {"Values": [
                {"Key": f"k{i}", "Value": "v"} for i in range(5)]}}]), "these conditions have 6"),
    ]
    for call, said in refusals:
        code, message = refused_with(call)
        assert (code, said in message) == ("ValidationError", True), (code, message)
    assert refused_with(lambda: elbv2.create_rule(ListenerArn=alb_listener, Priority=2, Actions=forward((web2, 1)),
                                                  Conditions=[header("x-other", "1")]))[0] == "PriorityInUse"
    rules = elbv2.describe_rules(ListenerArn=alb_listener)["Rules"]
    assert [r["Priority"] for r in rules] == ["1", "2", "default"], "nothing refused was made"
    assert [c["Field"] for c in rules[1]["Conditions"]] == ["http-header", "http-header", "path-pattern"], \
        "a refused ModifyRule changed nothing"


def test_application_signals_reports_a_budget_from_the_slis_metrics_in_cloudwatch(moto_endpoint):
    """SLOs over the wire (botocore's client, REST-JSON): created, read by name and by ARN,
    listed; each budget report computed from the SLI's metrics in moto's CloudWatch at its
    Timestamp, so a PutMetricData moves it; the API's refusals in its words."""
    signals = boto3.client("application-signals", endpoint_url=moto_endpoint, **CREDENTIALS)
    cw = boto3.client("cloudwatch", endpoint_url=moto_endpoint, **CREDENTIALS)
    checkout = [{"Name": "Service", "Value": "checkout"}]

    def query(name, stat="Sum"):
        return [{"Id": name.lower(), "MetricStat": {"Metric": {"Namespace": "Shop", "MetricName": name,
                                                               "Dimensions": checkout},
                                                    "Period": 60, "Stat": stat}}]

    goal = {"Interval": {"RollingInterval": {"DurationUnit": "HOUR", "Duration": 1}}, "AttainmentGoal": 99.0}
    slo = signals.create_service_level_objective(
        Name="checkout-availability", Goal=goal,
        RequestBasedSliConfig={"RequestBasedSliMetricConfig": {
            "TotalRequestCountMetric": query("Requests"),
            "MonitoredRequestCountMetric": {"BadCountMetric": query("Errors")}}})["Slo"]
    arn = slo["Arn"]
    assert arn == "arn:aws:application-signals:us-east-1:123456789012:slo/checkout-availability"
    assert (slo["EvaluationType"], slo["Goal"]["WarningThreshold"]) == ("RequestBased", 50.0)
    assert signals.get_service_level_objective(Id=arn)["Slo"]["Name"] == "checkout-availability"
    assert [s["Name"] for s in signals.list_service_level_objectives()["SloSummaries"]] == ["checkout-availability"]

    def reported(at=None):
        answer = signals.batch_get_service_level_objective_budget_report(
            Timestamp=at or datetime.datetime.now(datetime.timezone.utc),
            SloIds=["checkout-availability", "nobody's"])
        assert [(e["Name"], e["ErrorCode"]) for e in answer["Errors"]] == [("nobody's", "ResourceNotFoundException")]
        (found,) = answer["Reports"]
        return found

    assert reported()["BudgetStatus"] == "INSUFFICIENT_DATA"
    now = datetime.datetime.now(datetime.timezone.utc)

    def put(name, value, ago=30):
        cw.put_metric_data(Namespace="Shop", MetricData=[{"MetricName": name, "Dimensions": checkout,
                                                          "Value": value, "Timestamp": now - datetime.timedelta(seconds=ago)}])

    put("Requests", 1_000)
    put("Errors", 5)
    report = reported(now)
    # 1 % of 1,000 requests is the budget; 5 spent leaves half of it: not yet under the warning's 50 %.
    assert (report["BudgetStatus"], report["TotalBudgetRequests"], report["BudgetRequestsRemaining"]) == ("OK", 10, 5)
    assert report["Attainment"] == pytest.approx(99.5)
    put("Errors", 1, ago=20)
    assert (reported(now)["BudgetStatus"], reported(now)["BudgetRequestsRemaining"]) == ("WARNING", 4)
    put("Errors", 9, ago=10)
    report = reported(now)
    assert (report["BudgetStatus"], report["BudgetRequestsRemaining"]) == ("BREACHED", -5)
    # The interval rolls: two hours on, nothing of it is left.
    assert reported(now + datetime.timedelta(hours=2))["BudgetStatus"] == "INSUFFICIENT_DATA"

    latency = signals.create_service_level_objective(
        Name="checkout-latency", Goal={**goal, "AttainmentGoal": 60.0},
        SliConfig={"SliMetricConfig": {"MetricDataQueries": query("Latency", "Maximum"), "PeriodSeconds": 60},
                   "MetricThreshold": 0.5, "ComparisonOperator": "LessThan"})["Slo"]
    assert latency["EvaluationType"] == "PeriodBased"
    for minutes, value in ((3, 0.2), (2, 0.9), (1, 0.3)):
        put("Latency", value, ago=minutes * 60)
    (period,) = signals.batch_get_service_level_objective_budget_report(Timestamp=now, SloIds=[latency["Arn"]])["Reports"]
    # Two good minutes of three; 40 % of an hour is the budget, one bad minute spent of it.
    assert (period["BudgetStatus"], period["TotalBudgetSeconds"], period["BudgetSecondsRemaining"]) == ("OK", 1_440, 1_380)
    assert period["Attainment"] == pytest.approx(200 / 3)

    # A request-based latency SLI needs its threshold, which the report echoes.
    latency_counts = {"MetricType": "LATENCY", "TotalRequestCountMetric": query("Requests"),
                      "MonitoredRequestCountMetric": {"BadCountMetric": query("Errors")}}
    code, message = refused_with(lambda: signals.create_service_level_objective(
        Name="checkout-slow", Goal=goal, RequestBasedSliConfig={"RequestBasedSliMetricConfig": latency_counts}))
    assert code == "ValidationException" and "MetricThreshold" in message, message
    slow = signals.create_service_level_objective(
        Name="checkout-slow", Goal=goal, RequestBasedSliConfig={
            "RequestBasedSliMetricConfig": latency_counts, "MetricThreshold": 500, "ComparisonOperator": "LessThan"})
    (report,) = signals.batch_get_service_level_objective_budget_report(
        Timestamp=now, SloIds=[slow["Slo"]["Arn"]])["Reports"]
    assert (report["RequestBasedSli"]["MetricThreshold"], report["RequestBasedSli"]["ComparisonOperator"]) \
        == (500, "LessThan")
    assert report["RequestBasedSli"]["RequestBasedSliMetric"]["MetricType"] == "LATENCY"

    assert refused_with(lambda: signals.get_service_level_objective(Id="nobody"))[0] == "ResourceNotFoundException"
    assert refused_with(lambda: signals.create_service_level_objective(
        Name="checkout-availability", Goal=goal,
        RequestBasedSliConfig={"RequestBasedSliMetricConfig": {
            "TotalRequestCountMetric": query("Requests"),
            "MonitoredRequestCountMetric": {"BadCountMetric": query("Errors")}}}))[0] == "ConflictException"
    code, message = refused_with(lambda: signals.batch_get_service_level_objective_budget_report(
        Timestamp=now, SloIds=[f"slo-{i}" for i in range(51)]))
    assert code == "ValidationException" and "sloIds" in message and "less than or equal to 50" in message, message
    signals.delete_service_level_objective(Id="checkout-latency")
    assert refused_with(lambda: signals.get_service_level_objective(Id=latency["Arn"]))[0] == "ResourceNotFoundException"


def test_vpc_lattice_weights_answer_as_its_api_reference_documents(moto_endpoint):
    """A Lattice service's listener and rule forwarding to two target groups with weights, over
    the wire (botocore's client, REST-JSON signed for vpc-lattice): Lattice's identifiers and
    ARNs, GetRule, UpdateRule and UpdateListener (which moto lacks) replacing the action whole,
    the model's limits (weights 0-999, 1-10 target groups, priorities 1-2000, identifiers'
    patterns) and the service's refusals (a target group that does not exist, one named twice, a
    priority taken, a rule of another listener, an ARN of another Region), none of which changes
    anything; tags; targets UNUSED until a service forwards to their group."""
    # The client's own checks off: what is refused here is refused by the server.
    lattice = boto3.client("vpc-lattice", endpoint_url=moto_endpoint, **CREDENTIALS,
                           config=botocore.config.Config(parameter_validation=False))
    service = lattice.create_service(name="web", tags={"team": "platform"})
    assert re.fullmatch(r"svc-[0-9a-z]{17}", service["id"]), service["id"]
    assert service["arn"] == f"arn:aws:vpc-lattice:us-east-1:123456789012:service/{service['id']}"
    blue, green, spare = (lattice.create_target_group(name=name, type="IP", config={
        "port": 80, "protocol": "HTTP", "vpcIdentifier": "vpc-0123456789abcdef0"}) for name in ("blue", "green", "spare"))
    assert re.fullmatch(r"tg-[0-9a-z]{17}", blue["id"]) and blue["arn"].endswith(f":targetgroup/{blue['id']}")
    lattice.register_targets(targetGroupIdentifier=green["id"], targets=[{"id": "10.0.1.7", "port": 8080}])
    assert [t["status"] for t in lattice.list_targets(targetGroupIdentifier=green["id"])["items"]] == ["UNUSED"]

    def forward(*weights):
        return {"forward": {"targetGroups": [{"targetGroupIdentifier": g, "weight": w} for g, w in weights]}}

    listener = lattice.create_listener(serviceIdentifier=service["id"], name="http", protocol="HTTP",
                                       defaultAction=forward((blue["id"], 100)))
    assert re.fullmatch(r"listener-[0-9a-z]{17}", listener["id"]) and listener["port"] == 80
    assert listener["arn"] == f"{service['arn']}/listener/{listener['id']}"
    ids = {"serviceIdentifier": service["id"], "listenerIdentifier": listener["id"]}
    rule = lattice.create_rule(**ids, name="api", priority=10,
                               match={"httpMatch": {"pathMatch": {"match": {"prefix": "/api"}}}},
                               action=forward((blue["arn"], 90), (green["id"], 10)))
    assert re.fullmatch(r"rule-[0-9a-z]{17}", rule["id"]) and rule["arn"] == f"{listener['arn']}/rule/{rule['id']}"
    rule_ids = {**ids, "ruleIdentifier": rule["id"]}
    read = lattice.get_rule(**rule_ids)
    assert read["action"] == forward((blue["id"], 90), (green["id"], 10)), "target groups answered by ID"
    assert (read["priority"], read["isDefault"], read["name"]) == (10, False, "api")
    assert lattice.get_rule(serviceIdentifier=service["arn"], listenerIdentifier=listener["arn"],
                            ruleIdentifier=rule["arn"])["id"] == rule["id"], "ARNs name the same rule"
    assert [t["status"] for t in lattice.list_targets(targetGroupIdentifier=green["id"])["items"]] == ["HEALTHY"]

    # What the model refuses, and what the service refuses: nothing changes.
    refusals = [
        (lambda: lattice.update_rule(**rule_ids, action=forward((blue["id"], 1000))),
         "ValidationException", "Member must have value less than or equal to 999"),
        (lambda: lattice.update_rule(**rule_ids, action=forward(*[(blue["id"], 1)] * 11)),
         "ValidationException", "Member must have length less than or equal to 10"),
        (lambda: lattice.update_rule(**rule_ids, action={"forward": {"targetGroups": []}}),
         "ValidationException", "Member must have length greater than or equal to 1"),
        (lambda: lattice.update_rule(**rule_ids, action=forward(("tg-0123", 5))),
         "ValidationException", "Member must satisfy regular expression pattern"),
        (lambda: lattice.update_rule(**rule_ids, priority=2001),
         "ValidationException", "Member must have value less than or equal to 2000"),
        (lambda: lattice.update_rule(**rule_ids, action=forward(("tg-0123456789abcdefg", 5))),
         "ResourceNotFoundException", "Target group tg-0123456789abcdefg not found"),
        (lambda: lattice.update_rule(**rule_ids, action=forward((blue["id"], 5), (blue["arn"], 5))),
         "ValidationException", "more than once"),
        (lambda: lattice.update_listener(**ids, defaultAction=forward((green["id"], 1), ("tg-0000000000000000a", 1))),
         "ResourceNotFoundException", "not found"),
        (lambda: lattice.get_rule(**ids, ruleIdentifier="rule-0000000000000000a"),
         "ResourceNotFoundException", "Rule rule-0000000000000000a not found"),
        (lambda: lattice.get_listener(serviceIdentifier=service["id"],
                                      listenerIdentifier=listener["arn"].replace("us-east-1", "eu-west-1")),
         "ResourceNotFoundException", "not found"),
    ]
    other = lattice.create_rule(**ids, name="other", priority=20, match={"httpMatch": {"method": "POST"}},
                                action=forward((spare["id"], 1)))
    refusals.append((lambda: lattice.update_rule(**ids, ruleIdentifier=other["id"], priority=10),
                     "ConflictException", "Priority 10 is already in use"))
    second = lattice.create_listener(serviceIdentifier=service["id"], name="https", protocol="HTTPS",
                                     defaultAction={"fixedResponse": {"statusCode": 404}})
    assert second["port"] == 443
    refusals.append((lambda: lattice.get_rule(serviceIdentifier=service["id"], listenerIdentifier=second["id"],
                                              ruleIdentifier=rule["id"]),
                     "ResourceNotFoundException", "not found"))
    for call, code, said in refusals:
        with pytest.raises(ClientError) as refused:
            call()
        error = refused.value.response["Error"]
        assert (error["Code"], said in error["Message"]) == (code, True), error
    assert lattice.get_rule(**rule_ids)["action"] == forward((blue["id"], 90), (green["id"], 10))
    assert lattice.get_listener(**ids)["defaultAction"] == forward((blue["id"], 100))

    # UpdateRule and UpdateListener replace the action whole and answer it.
    updated = lattice.update_rule(**rule_ids, action=forward((blue["id"], 50), (green["id"], 50)))
    assert updated["action"] == forward((blue["id"], 50), (green["id"], 50)) and updated["priority"] == 10
    assert lattice.get_rule(**rule_ids)["action"] == updated["action"]
    answered = lattice.update_listener(**ids, defaultAction=forward((green["arn"], 999)))
    assert answered["defaultAction"] == forward((green["id"], 999))
    assert lattice.get_listener(**ids)["defaultAction"] == forward((green["id"], 999))
    assert [r["priority"] for r in lattice.list_rules(**ids)["items"]] == [10, 20]

    # Tags, given at creation and later; unknown ARNs are not found.
    lattice.tag_resource(resourceArn=rule["arn"], tags={"application-networking.k8s.aws/ManagedBy": "1/blue/vpc-1"})
    assert lattice.list_tags_for_resource(resourceArn=rule["arn"])["tags"] == {
        "application-networking.k8s.aws/ManagedBy": "1/blue/vpc-1"}
    assert lattice.list_tags_for_resource(resourceArn=service["arn"])["tags"] == {"team": "platform"}
    with pytest.raises(ClientError) as refused:
        lattice.list_tags_for_resource(resourceArn=service["arn"].replace(service["id"], "svc-0000000000000000a"))
    assert refused.value.response["Error"]["Code"] == "ResourceNotFoundException"

    # The harness's control sets a target's status.
    request = urllib.request.Request(f"{moto_endpoint}/_harness/vpclattice/123456789012/us-east-1", method="POST",
                                     data=json.dumps({"status": {green["id"]: {"10.0.1.7": "UNHEALTHY"}}}).encode())
    urllib.request.urlopen(request).read()
    assert [t["status"] for t in lattice.list_targets(targetGroupIdentifier=green["id"])["items"]] == ["UNHEALTHY"]


def harness_synthetics(endpoint, runs):
    request = urllib.request.Request(f"{endpoint}/_harness/synthetics/123456789012/us-east-1", method="POST",
                                     data=json.dumps({"runs": runs}).encode())
    with urllib.request.urlopen(request) as answer:
        return json.load(answer)


def test_synthetics_canaries_start_stop_and_run_as_a_test_says(moto_endpoint):
    """CloudWatch Synthetics over the wire (botocore's client, REST-JSON signed for synthetics):
    a canary is started and stopped as the API reference documents (a running one cannot be
    started again, a stopped one cannot be stopped), runs only while it runs and only the runs the
    harness gives it (one a read, newest first; none given: no run comes), a run-once schedule
    stops itself after its run, and the model's limits and the service's refusals change
    nothing."""
    synthetics = boto3.client("synthetics", endpoint_url=moto_endpoint, **CREDENTIALS,
                              config=botocore.config.Config(parameter_validation=False))

    def create(name, schedule="rate(1 minute)"):
        return synthetics.create_canary(
            Name=name, Code={"Handler": "index.handler", "S3Bucket": "code", "S3Key": "canary.zip"},
            ArtifactS3Location="s3://artifacts/green", ExecutionRoleArn="arn:aws:iam::123456789012:role/canary",
            Schedule={"Expression": schedule}, RuntimeVersion="syn-nodejs-puppeteer-9.1")["Canary"]

    def state(name):
        return synthetics.get_canary(Name=name)["Canary"]["Status"]["State"]

    def runs(name):
        return [(r["Status"]["State"], r["Status"].get("StateReason")) for r in
                synthetics.get_canary_runs(Name=name)["CanaryRuns"]]

    assert create("green-checkout")["Status"]["State"] == "READY"
    assert runs("green-checkout") == [], "a canary never started never runs"
    harness_synthetics(moto_endpoint, {"green-checkout": ["PASSED", {"state": "FAILED", "reason": "500 on /pay"}]})
    assert runs("green-checkout") == [], "given runs wait for the canary to run"

    synthetics.start_canary(Name="green-checkout")
    canary = synthetics.get_canary(Name="green-checkout")["Canary"]  # a read: the first run comes
    assert canary["Status"]["State"] == "RUNNING" and canary["Timeline"]["LastStarted"]
    assert runs("green-checkout") == [("FAILED", "500 on /pay"), ("PASSED", None)], "one run a read, newest first"
    failed = synthetics.get_canary_runs(Name="green-checkout")["CanaryRuns"][0]
    assert failed["Status"]["StateReasonCode"] == "CANARY_FAILURE"
    assert failed["ArtifactS3Location"].startswith("artifacts/green/canary/us-east-1/green-checkout/")
    assert len(runs("green-checkout")) == 2, "no run given: none comes"

    page = synthetics.get_canary_runs(Name="green-checkout", MaxResults=1)
    assert len(page["CanaryRuns"]) == 1 and page["NextToken"]
    rest = synthetics.get_canary_runs(Name="green-checkout", MaxResults=1, NextToken=page["NextToken"])
    assert [r["Status"]["State"] for r in rest["CanaryRuns"]] == ["PASSED"] and "NextToken" not in rest

    # A run-once canary stops itself after its run; a stopped canary runs nothing given to it.
    create("green-once", schedule="rate(0 minute)")
    harness_synthetics(moto_endpoint, {"green-once": ["PASSED", "PASSED"]})
    synthetics.start_canary(Name="green-once")
    assert runs("green-once") == [("PASSED", None)] and state("green-once") == "STOPPED"
    assert runs("green-once") == [("PASSED", None)], "stopped: the second run waits"
    synthetics.stop_canary(Name="green-checkout")
    assert state("green-checkout") == "STOPPED"
    assert synthetics.get_canary(Name="green-checkout")["Canary"]["Timeline"]["LastStopped"]

    described = synthetics.describe_canaries(Names=["green-once", "absent"])["Canaries"]
    assert [c["Name"] for c in described] == ["green-once"]
    first = synthetics.describe_canaries(MaxResults=1)
    assert len(first["Canaries"]) == 1 and first["NextToken"]

    refusals = [
        (lambda: synthetics.start_canary(Name="absent"), "ResourceNotFoundException", "Canary absent not found"),
        (lambda: synthetics.get_canary_runs(Name="absent"), "ResourceNotFoundException", "not found"),
        (lambda: synthetics.get_canary(Name="absent"), "ResourceNotFoundException", "not found"),
        (lambda: synthetics.stop_canary(Name="green-once"), "ConflictException", "only a running canary"),
        (lambda: synthetics.get_canary_runs(Name="Green"), "ValidationException",
         "Member must satisfy regular expression pattern"),
        (lambda: synthetics.get_canary_runs(Name="green-once", MaxResults=101), "ValidationException",
         "Member must have value less than or equal to 100"),
        (lambda: synthetics.describe_canaries(Names=["a", "b", "c", "d", "e", "f"]), "ValidationException",
         "Member must have length less than or equal to 5"),
        (lambda: synthetics.get_canary_runs(Name="green-once", NextToken="not-a-token"), "ValidationException",
         "is not valid"),
        (lambda: create("green-once"), "ValidationException", "Canary green-once already exists"),
    ]
    synthetics.start_canary(Name="green-checkout")
    refusals.append((lambda: synthetics.start_canary(Name="green-checkout"), "ConflictException", "RUNNING"))
    for call, code, said in refusals:
        with pytest.raises(ClientError) as refused:
            call()
        error = refused.value.response["Error"]
        assert (error["Code"], said in error["Message"]) == (code, True), error
    assert (state("green-checkout"), state("green-once")) == ("RUNNING", "STOPPED")
    assert len(runs("green-checkout")) == 2 and len(runs("green-once")) == 1

    # The harness refuses a run that is no run, and a canary that does not exist.
    for bad in ({"green-once": ["SKIPPED"]}, {"absent": ["PASSED"]}):
        with pytest.raises(urllib.error.HTTPError) as refused:
            harness_synthetics(moto_endpoint, bad)
        assert refused.value.code in (400, 404)

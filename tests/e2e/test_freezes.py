"""Change freezes end to end (docs/operations.md, "Change freezes"): a Change Calendar in SSM
(an iCalendar document, evaluated by the moto harness's GetCalendarState) and the stack's
freeze switch (`cluster-canary freeze` / `unfreeze`), read by the stack's functions as deployed.

A freeze holds a rollout where it is: before its first step (nothing moves), or at the end of a
step's bake (the step stays, its checks go on). It never holds a rollback, and a hold longer
than the plan's bound ends the rollout as frozen too long."""
import datetime
import hashlib
import json
import time

import jsonschema

from helpers import BASELINE, captured
from sandbox import fleets, scenarios
from sandbox.health_events import HTTP_DATE
from sandbox.harness import Sandbox
from sandbox.stack import STACK_NAME


def ical(*events, kind="DEFAULT_OPEN"):
    """A Change Calendar document as the console writes it; each event (start, end) in seconds
    from now."""
    now = datetime.datetime.now(datetime.timezone.utc)
    at = lambda offset: (now + datetime.timedelta(seconds=offset)).strftime("%Y%m%dT%H%M%SZ")  # noqa: E731
    body = "".join(
        f"BEGIN:VEVENT\r\nDTSTAMP:20261101T000000Z\r\nUID:event-{i}\r\nSUMMARY:freeze {i}\r\n"
        f"DTSTART:{at(start)}\r\nDTEND:{at(end)}\r\nEND:VEVENT\r\n"
        for i, (start, end) in enumerate(events))
    return (f"BEGIN:VCALENDAR\r\nPRODID:-//AWS//Change Calendar 1.0//EN\r\nVERSION:2.0\r\n"
            f"X-CALENDAR-TYPE:{kind}\r\nX-WR-CALDESC:release freeze\r\n{body}END:VCALENDAR\r\n")


def put_calendar(sandbox, name, content):
    """Creates (or replaces) the Change Calendar `name`."""
    ssm = sandbox.client("ssm")
    try:
        ssm.delete_document(Name=name)
    except ssm.exceptions.InvalidDocument:
        pass
    ssm.create_document(Name=name, Content=content, DocumentType="ChangeCalendar", DocumentFormat="TEXT")


def two_steps(sandbox, freeze=None):
    scenarios.create_green(sandbox)
    plan = scenarios.manual_plan(sandbox)
    plan["steps"] = [{"weight": 50}, {"weight": 100}]
    if freeze:
        plan["freeze"] = freeze
    return plan


def checked(events, detail_type):
    found = [d for t, d in events if t == detail_type]
    for detail in found:
        jsonschema.validate(detail, scenarios.event_schema(detail_type))
    return found


def test_a_calendar_closed_during_a_bake_holds_the_step_until_it_opens():
    with Sandbox(log=captured) as sandbox:
        put_calendar(sandbox, "release-freeze", ical())
        plan = two_steps(sandbox, {"calendars": ["release-freeze"], "maxFrozenSeconds": 600})
        lines, held, sets = [], [], []

        def on_event(name, state):
            if name == "SetWeights":
                sets.append(len(held))
            if name != "Evaluate" or state["cursor"]["number"] != 1:
                return
            if state["bake"]["frozenSince"]:
                held.append(state["bake"])
                if len(held) == 3:
                    put_calendar(sandbox, "release-freeze", ical((-7200, -3600)))
            elif not held:
                # The first check of step 1: the freeze begins (an event from a minute ago).
                put_calendar(sandbox, "release-freeze", ical((-60, 3600)))

        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "frozen-bake"),
                                 on_event=on_event, out=lambda line: (captured(line), lines.append(line)))
        assert report.status == "SUCCEEDED", report.cause
        assert len(held) >= 3
        assert "Change Calendar release-freeze is CLOSED (opens at " in held[0]["summary"], held[0]["summary"]
        assert all(b["rollback"] is False for b in held)
        assert sets == [0, 3], "step 2 was set only once the calendar opened"
        [frozen] = checked(report.events, "Rollout Frozen")
        assert frozen["step"] == {"number": 1, "count": 2, "weight": 50} and "release-freeze" in frozen["reason"]
        assert any(line.lstrip().startswith("held: since ") and "release-freeze" in line for line in lines), lines
        assert sum(1 for name, _, _ in report.metrics if name == "FrozenChecks") >= 3


def test_a_freeze_held_past_its_bound_during_a_bake_rolls_back_in_its_own_words():
    """No check failed: the execution ends FrozenTooLong, and its cause says a freeze held the
    step too long, not that a check failed."""
    with Sandbox(log=captured) as sandbox:
        put_calendar(sandbox, "release-freeze", ical())
        plan = two_steps(sandbox, {"calendars": ["release-freeze"], "maxFrozenSeconds": 60})

        def on_event(name, state):
            if name == "Evaluate" and state["cursor"]["number"] == 1 and not state["bake"]["frozenSince"]:
                put_calendar(sandbox, "release-freeze", ical((-60, 7200)))

        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "frozen-too-long-bake"),
                                 on_event=on_event, out=captured)
        assert (report.status, report.error) == ("FAILED", "FrozenTooLong"), report.cause
        assert report.cause.startswith("A change freeze held step 1 of 2 (50% of traffic on the new cluster) longer "
                                       "than its freeze.maxFrozenSeconds allows, and no check failed; traffic restored "
                                       "to the baseline. "), report.cause
        assert "frozen too long: held " in report.cause
        assert "Canary check failed" not in report.cause
        assert "DescribeFrozenTooLong" in report.states and "DescribeCheckFailure" not in report.states
        assert report.weights == BASELINE
        assert ("Rollbacks", {"Cluster": "us-east-1/green", "Cause": "FrozenTooLong"}, 1) in report.metrics, \
            report.metrics


def test_the_switch_holds_a_rollout_and_a_failing_check_still_rolls_back_at_once():
    with Sandbox(log=captured) as sandbox:
        plan = two_steps(sandbox)
        plan["analysis"]["failureLimit"] = 1
        frozen = sandbox.cli("freeze", "--reason", "incident 4711: payments degraded", "--by", "oncall")
        assert frozen.returncode == 0, frozen.stderr
        assert frozen.stdout.startswith("frozen: until `cluster-canary unfreeze`, no rollout of the stack starts"), \
            frozen.stdout
        assert "a step whose last check passed before this is still written" in frozen.stdout, "what it promises"
        status = sandbox.cli("freeze", "status")
        assert status.stdout.startswith("frozen: ") and "the freeze switch is on since " in status.stdout
        assert "by oncall: incident 4711" in status.stdout, status.stdout
        looks, listed = [], []

        def on_event(name, state):
            if name == "FreezeGate":
                looks.append(state["freeze"])
                if len(looks) == 2:
                    listed.append(sandbox.cli("list").stdout)
                    assert sandbox.cli("unfreeze", "--by", "oncall").returncode == 0
            if name == "Evaluate" and state["cursor"]["number"] == 2 and not state["bake"]["rollback"]:
                # The last step bakes: a freeze again, then its alarm fires.
                if sandbox.cli("freeze", "status").stdout.startswith("not frozen"):
                    assert sandbox.cli("freeze", "--reason", "second incident").returncode == 0
                    sandbox.client("cloudwatch").set_alarm_state(
                        AlarmName="web-green-5xx", StateValue="ALARM", StateReason="Threshold Crossed: 42 5xx")

        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "switched"), on_event=on_event,
                                 out=captured)
        assert [look["frozen"] for look in looks[:2]] == [True, True]
        assert "incident 4711: payments degraded" in looks[0]["reason"]
        assert looks[-1]["frozen"] is False
        assert "RUNNING (frozen)" in listed[0] and "frozen since" in listed[0], listed[0]
        assert report.states.index("WaitWhileFrozen") < report.states.index("RememberBaseline")
        assert (report.status, report.error) == ("FAILED", "CheckFailed"), report.cause
        assert report.weights == BASELINE, "the freeze never holds a rollback"
        [gate_frozen] = checked(report.events, "Rollout Frozen")
        assert gate_frozen["step"] is None
        # The CLI's events name no execution.
        switched = checked(scenarios.read_events(sandbox, None), "Rollouts Frozen")
        assert [d["reason"] for d in switched] == ["incident 4711: payments degraded", "second incident"]


def test_a_freeze_longer_than_the_bound_ends_the_rollout_with_nothing_moved():
    with Sandbox(log=captured) as sandbox:
        put_calendar(sandbox, "release-freeze", ical((-60, 7200)))
        plan = two_steps(sandbox, {"calendars": ["release-freeze"], "maxFrozenSeconds": 60})
        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "too-long"), out=captured)
        assert (report.status, report.error) == ("FAILED", "FrozenTooLong"), report.cause
        assert report.cause.startswith("frozen too long: held "), report.cause
        assert report.cause.endswith("; no traffic was moved"), report.cause
        assert "SetWeights" not in report.states and "RegisterCluster" not in report.states
        assert report.max_canary == 0 and report.weights == BASELINE
        assert report.safety_net["restored"] is False, "a settled end"
        assert checked(report.events, "Rollout Failed")[0]["end"] == "FrozenTooLong"


def test_a_bad_calendar_or_reason_is_refused_and_changes_nothing():
    with Sandbox(log=captured) as sandbox:
        plan = two_steps(sandbox, {"calendars": ["no-such-calendar"]})
        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "no-calendar"), out=captured)
        assert (report.status, report.error) == ("FAILED", "InvalidPlan"), report.cause
        assert "freeze.calendars[0]: Change Calendar `no-such-calendar` does not exist" in report.cause
        assert report.max_canary == 0 and report.weights == BASELINE
        refused = sandbox.cli("freeze", "--reason", "")
        assert refused.returncode == 1 and "give --reason TEXT" in refused.stderr, refused.stderr
        assert sandbox.cli("freeze", "status").stdout.startswith("not frozen")
        # A switch someone deleted counts as on for every rollout; `unfreeze` writes it again.
        sandbox.client("ssm").delete_parameter(Name=sandbox.freeze_parameter)
        missing = sandbox.cli("freeze", "status")
        assert missing.returncode == 1 and "ParameterNotFound" in missing.stderr, missing.stderr
        unfrozen = sandbox.cli("unfreeze")
        assert unfrozen.returncode == 0 and "the switch could not be read" in unfrozen.stdout, unfrozen.stdout
        status = sandbox.cli("freeze", "status").stdout
        assert status.startswith("not frozen") and "the freeze switch is off (unfrozen " in status, status


def test_freeze_status_reads_the_stacks_calendars_too():
    """A CLOSED calendar of the stack holds every rollout as the switch does: the status says
    frozen, naming it, though the switch is off."""
    with Sandbox(log=captured, parameters={"ChangeCalendars": "stack-freeze"}) as sandbox:
        put_calendar(sandbox, "stack-freeze", ical((-7200, -3600)))
        status = sandbox.cli("freeze", "status")
        assert status.returncode == 0, status.stderr
        assert status.stdout.startswith("not frozen"), status.stdout
        assert "Change Calendar stack-freeze is OPEN" in status.stdout
        put_calendar(sandbox, "stack-freeze", ical((-60, 3600)))
        status = sandbox.cli("freeze", "status")
        assert status.stdout.startswith("frozen: no rollout of the stack starts or moves to a next step"), status.stdout
        assert "the freeze switch is off" in status.stdout
        assert "Change Calendar stack-freeze is CLOSED until " in status.stdout, status.stdout
        as_json = json.loads(sandbox.cli("freeze", "status", "--output", "json").stdout)
        assert as_json["held"] is True and as_json["calendars"] == [{"calendar": "stack-freeze", "state": "CLOSED"}]


def test_the_switch_stops_a_running_fleets_next_wave_until_it_is_off():
    with Sandbox(log=captured) as sandbox:
        cells = fleets.seed_cells(sandbox)
        plan = fleets.fleet_plan(cells, soak={"seconds": 6})
        plan["template"]["freeze"] = {"maxFrozenSeconds": 600}
        execution = fleets.start_fleet(sandbox, plan, "frozen-fleet")
        sfn = sandbox.client("stepfunctions", attempts=10)

        def entered(name):
            return any(e.get("stateEnteredEventDetails", {}).get("name") == name
                       for e in sfn.get_execution_history(executionArn=execution, maxResults=1000)["events"])

        deadline = time.monotonic() + 300
        while not entered("Soak"):
            assert time.monotonic() < deadline, "wave 1 never ended"
            time.sleep(0.5)
        assert sandbox.cli("freeze", "--reason", "holiday change freeze").returncode == 0
        while not entered("WaitWhileWaveFrozen"):
            assert time.monotonic() < deadline, "the freeze never held wave 2"
            time.sleep(0.5)
        time.sleep(8)
        assert set(fleets.children(sandbox, execution)) == {"use1-a"}, "no cell of wave 2 started"
        assert sandbox.cli("unfreeze").returncode == 0
        ended = fleets.wait_for_end(sandbox, execution)
        assert ended["status"] == "SUCCEEDED", ended
        assert set(fleets.children(sandbox, execution)) == set(cells)
        events = scenarios.read_events(sandbox, execution)
        [wave_frozen] = checked(events, "Wave Frozen")
        assert wave_frozen["wave"] == 2 and "holiday change freeze" in wave_frozen["reason"]
        assert fleets.cell_weights(sandbox, cells) == {cell: (0, 100) for cell in cells}


def test_an_open_aws_health_issue_in_the_rollouts_region_holds_it_until_it_closes():
    """AWS Health's event for an EKS issue in the new cluster's Region (on the bus, through the
    stack's AwsHealthEvent rule): recorded, and the rollout holds before its first step, as a
    freeze holds it, saying why; an issue elsewhere, or of a service rollouts do not depend on,
    holds nothing. Closed, the record says so and the rollout goes on to promotion; the issue's
    open delivered again after its close (EventBridge does not promise order) changes nothing,
    and a closed record past its two days goes at the Region's next close."""
    with Sandbox(log=captured) as sandbox:
        health = sandbox.health_events
        elsewhere = health.put("EKS", "eu-west-1", description="Elevated API latency in eu-west-1.")
        issue = health.put("EKS", "us-east-1", description="We are investigating increased API error rates.")
        assert health.answered(issue, "open")["recorded"].startswith("recorded")
        ssm = sandbox.client("ssm")
        path = f"/cluster-canary/{STACK_NAME}/health/us-east-1"
        [record] = ssm.get_parameters_by_path(Path=path)["Parameters"]
        assert json.loads(record["Value"])["eventArn"] == issue
        health.answered(elsewhere, "open")
        s3 = health.put("S3", "us-east-1")
        time.sleep(1)
        assert all(r["detail"]["eventArn"] != s3 for r in health.reactions), "the rule passes only EKS, ELB, EC2, Route 53"

        # An issue closed three days ago, its record still there.
        old = "arn:aws:health:us-east-1::event/EC2/AWS_EC2_OPERATIONAL_ISSUE/AWS_EC2_OPERATIONAL_ISSUE_0ld"
        three_days_ago = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=3)).strftime(HTTP_DATE)
        ssm.put_parameter(Name=f"{path}/{hashlib.sha256(old.encode()).hexdigest()[:32]}", Type="String", Value=json.dumps({
            "eventArn": old, "service": "EC2", "eventTypeCode": "AWS_EC2_OPERATIONAL_ISSUE", "region": "us-east-1",
            "status": "closed", "startTime": three_days_ago, "lastUpdatedTime": three_days_ago, "description": ""}))

        plan = two_steps(sandbox)
        looks, lines = [], []
        opened = datetime.datetime.now(datetime.timezone.utc)

        def on_event(name, state):
            if name == "FreezeGate":
                looks.append(state["freeze"])
                if len(looks) == 2:
                    health.put("EKS", "us-east-1", status="closed", event_arn=issue,
                               updated=opened + datetime.timedelta(minutes=40))

        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "aws-health"), on_event=on_event,
                                 out=lambda line: (captured(line), lines.append(line)))
        assert report.status == "SUCCEEDED", report.cause
        assert len(looks) >= 3 and looks[0]["frozen"] and not looks[-1]["frozen"], looks
        assert ("frozen: a change freeze holds the rollout where it is (AWS Health: an open EKS issue in us-east-1 "
                "(AWS_EKS_OPERATIONAL_ISSUE, since ") in looks[0]["reason"], looks[0]
        assert "We are investigating increased API error rates." in looks[0]["reason"]
        assert "eu-west-1" not in looks[0]["reason"]
        [frozen] = checked(report.events, "Rollout Frozen")
        assert "AWS Health: an open EKS issue in us-east-1" in frozen["reason"], frozen
        [record] = ssm.get_parameters_by_path(Path=path)["Parameters"]
        assert json.loads(record["Value"])["status"] == "closed", "closed: kept as closed, the old one gone"
        assert report.states.index("SetWeights") > report.states.index("FreezeGate")
        assert health.answered(issue, "closed")["recorded"].startswith("recorded closed")

        # The issue's open, delivered again after its close: older than the record, it changes nothing.
        health.reactions.clear()
        health.put("EKS", "us-east-1", event_arn=issue, updated=opened)
        assert health.answered(issue, "open")["recorded"].startswith("unchanged: its record holds a later update")
        assert ssm.get_parameters_by_path(Path=path)["Parameters"] == [record]

        # What AWS Health could not have sent is refused, naming what is wrong, and recorded
        # nowhere: answered as handled (Lambda would deliver a function error twice more), and
        # counted.
        error, answer = sandbox.invoke("evaluate-alarms", {"operation": "healthEvent", "detail": {
            "eventArn": issue, "service": "EKS", "eventTypeCode": "AWS_EKS_OPERATIONAL_ISSUE",
            "statusCode": "open", "eventRegion": "us-east-99x"}})
        assert not error, answer
        assert "detail.eventRegion `us-east-99x` is not an AWS Region" in answer["refused"], answer
        assert ssm.get_parameters_by_path(Path=path)["Parameters"] == [record]


def test_a_plan_that_rolls_back_on_aws_health_issues_rolls_back_at_the_issues_event():
    """`awsHealth.onOpenIssue: rollBack`: an EKS issue opened in the Region during the first
    step's bake fails the bake's watch at once (its event, not the next check), and the rollout
    restores the baseline saying why."""
    with Sandbox(log=captured) as sandbox:
        plan = two_steps(sandbox)
        plan["awsHealth"] = {"onOpenIssue": "rollBack"}
        plan["bake"] = {"seconds": 60, "checkIntervalSeconds": 20}
        opened = []

        def on_event(name, state):
            # After step 1's first check: its watch is registered, its next check 20 s away.
            if name == "Evaluate" and not opened:
                opened.append(sandbox.health_events.put("EKS", "us-east-1", description="API errors"))

        report = scenarios.watch(sandbox, scenarios.start_manual(sandbox, plan, "health-rollback"),
                                 on_event=on_event, out=captured)
        assert (report.status, report.error) == ("FAILED", "CheckFailed"), report.cause
        assert "AWS Health: an open EKS issue in us-east-1 (AWS_EKS_OPERATIONAL_ISSUE, since " in report.cause
        assert "(its AWS Health event, before the next check)" in report.cause, report.cause
        answer = sandbox.health_events.answered(opened[0], "open")
        assert answer["failed"] == [report.execution_arn], answer
        assert report.max_canary == 50 and report.weights == BASELINE

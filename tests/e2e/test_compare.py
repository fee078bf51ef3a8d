"""End to end with the comparison check (`analysis.compare`): the canary's and the stable target
group's ALB response times in CloudWatch (the sandbox's `compare` scenarios, sandbox/compare.py),
compared at every check by the real evaluate-alarms function inside the real state machine; and a
fleet whose cells are also compared with their promoted peers (`fleet-outlier`).
"""
import json
import os
import re
import shutil
import struct
import subprocess
import time

from helpers import BASELINE, PROMOTED, ROLLED_BACK_FOR_A_CHECK, captured, event_types
from sandbox import compare, fleets, scenarios
from sandbox.alb_metrics import AlbMetrics
from sandbox.harness import Sandbox


def test_a_latency_regression_under_every_threshold_rolls_back_on_the_comparison_alone(tmp_path):
    lines = []

    def out(line):
        print(line)
        lines.append(line)

    with Sandbox(log=out) as sandbox:
        report = scenarios.run_compare(sandbox, "compare", out, verbose=True)
        page = tmp_path / "report.html"
        written = sandbox.cli("report", report.execution_arn, "--out", str(page))
        assert written.returncode == 0, written.stderr
        assert_report_renders(page, tmp_path)
    assert report.status == "FAILED", report
    assert report.error == "CheckFailed"
    # The slow requests (counted per request) show it first, in a few periods; the p99's signs
    # (one a period) by the same check or the next. The canary's target group has data from its
    # first step only (as in AWS), so it is caught at the 10 % step or the 50 % one.
    assert "compare slow requests: High (check Fail at score" in report.cause, report.cause
    # Every threshold passed: the alarms are OK, the canary's p99 is under its limit.
    assert "canary p99 latency is 0.1" in report.cause and "within limits" in report.cause, report.cause
    assert "is ALARM" not in report.cause
    assert report.states[-len(ROLLED_BACK_FOR_A_CHECK):] == ROLLED_BACK_FOR_A_CHECK
    assert report.weights == BASELINE
    assert event_types(report) in (["Rollout Started", "Traffic Shifted", "Check Failed", "Rolled Back"],
                                   ["Rollout Started", "Traffic Shifted", "Traffic Shifted", "Check Failed",
                                    "Rolled Back"]), event_types(report)
    assert report.max_canary <= 50, "100 % was never set"
    failed = next(detail for kind, detail in report.events if kind == "Check Failed")
    assert "compare slow requests: High" in failed["cause"], failed
    assert "canary 3 vs baseline 0 (shift +3) in the last 20 s" in failed["cause"], failed
    assert "period(s) above the allowed band since the comparison began" in failed["cause"], failed
    # The medians side by side, for the dashboard: the canary's half again the baseline's.
    medians = {d["Side"]: value for name, d, value in report.metrics
               if name == "ComparedMedian" and d["Check"] == "p99 latency"}
    assert set(medians) == {"canary", "baseline"}, report.metrics
    assert 1.3 < medians["canary"] / medians["baseline"] < 1.7, medians
    # `watch --verbose` shows the comparison's every metric: before the canary has minSamples
    # periods each is NoData, and the bake goes on for want of data rather than pass or fail.
    checks = [line for line in lines if line.lstrip().startswith("check ")]
    assert checks and "compare p99 latency: NoData" in checks[0] and "compare 5xx rate: NoData" in checks[0], lines
    failing = next(line for line in checks if ": fail --" in line)
    assert "compare slow requests: High" in failing, failing


def test_a_load_spike_on_both_clusters_passes_the_comparison():
    report = scenarios.run("compare-spike", out=print)
    assert report.status == "SUCCEEDED", report
    assert report.weights == PROMOTED
    # No check failed, through the spike; the first ones held while the canary, which has data
    # from its first step only, gathered minSamples periods.
    failed = [value for name, _, value in report.metrics if name == "ChecksFailed"]
    passed = [value for name, _, value in report.metrics if name == "ChecksPassed"]
    assert failed and not any(failed), failed
    assert passed.count(1) >= 6, passed
    baseline = [value for name, d, value in report.metrics
                if name == "ComparedMedian" and d["Check"] == "p99 latency" and d["Side"] == "baseline"]
    # The spike (3x from the 50 % step's weight on) in the baseline's window median: the 50 %
    # step's checks see it come in; at 100 % the baseline serves nothing and is not compared.
    assert max(baseline) > 1.5 * min(baseline), f"the spike raised the baseline's latency: {baseline}"


def test_a_fleet_cell_whose_canary_is_an_outlier_among_four_promoted_peers_rolls_back():
    with Sandbox(log=print) as sandbox:
        ended, cells, cli_exit = fleets.run_fleet(sandbox, "fleet-outlier", print)
        assert ended["status"] == "FAILED" and ended["error"] == "FleetHalted", ended
        assert cli_exit == 1
        assert "Promoted: 4, failed: 1" in ended["cause"], ended["cause"]
        assert fleets.cell_weights(sandbox, cells) == {
            cell: (100, 0) if cell == fleets.OUTLIER else (0, 100) for cell in cells}
        children = fleets.children(sandbox, ended["executionArn"])
        outlier = children[fleets.OUTLIER]
        assert outlier["error"] == "CheckFailed"
        # Against its own baseline (as slow as itself) the canary passes; among its peers it is
        # an outlier, and that alone rolls it back.
        assert "peers p99 latency: High, an outlier among 4 promoted peer(s)" in outlier["cause"], outlier["cause"]
        assert "compare p99 latency: Pass" in outlier["cause"], outlier["cause"]
        plan = json.loads(outlier["input"])
        peers = plan["analysis"]["compare"]["peers"]["cells"]
        assert sorted(p["name"] for p in peers) == ["use1-a", "use1-b", "use1-c", "use1-d"]
        # Wave 1's cells had no promoted peer: not judged against peers.
        first = json.loads(children["use1-a"]["input"])
        assert "cells" not in first["analysis"]["compare"]["peers"]


def assert_report_renders(page, tmp_path):
    """`cluster-canary report`'s page in a real headless Chromium (Debian's): it loads offline,
    its DOM has the charts and the checks, and a screenshot of it is a picture of the page
    (`REPORT_SCREENSHOT=<path>` keeps it: docs/report.png)."""
    html = page.read_text()
    assert "Rollout of us-east-1/green — FAILED (CheckFailed)" in html
    assert "compare slow requests: High" in html and "<h3>p99 latency</h3>" in html
    chromium = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*chromium, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr
    assert dom.stdout.count("<svg") == 4, "the share, p99 latency, 5xx rate and slow requests"
    assert "<polyline" in dom.stdout and "step 1/3: 10%" in dom.stdout
    screenshot = tmp_path / "report.png"
    shot = subprocess.run([*chromium, "--window-size=1200,1500", f"--screenshot={screenshot}", page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert shot.returncode == 0, shot.stderr
    data = screenshot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "a PNG"
    assert struct.unpack(">II", data[16:24]) == (1200, 1500)
    assert len(data) > 30_000, "charts and text, not a blank page"
    if os.environ.get("REPORT_SCREENSHOT"):
        shutil.copy(screenshot, os.environ["REPORT_SCREENSHOT"])


def slower_canary(sandbox):
    """The green cluster, and the ALB feed of its canary 1.5 times slower than the baseline
    (sandbox/compare.py): enter it to start putting."""
    scenarios.create_green(sandbox)
    latencies = compare.Latencies()
    latencies.canary_factor = 1.5
    return AlbMetrics(sandbox, latencies)


def compared_plan(sandbox, alb):
    """A person's plan for green with the sandbox's comparison of `alb`'s target groups."""
    plan = scenarios.manual_plan(sandbox)
    plan["analysis"] = compare.analysis(alb)
    return plan


def test_a_marginal_comparison_asks_a_person_before_the_next_step():
    """`onMarginal: ask`: p99 latency and the slow requests (weight 1 each) High, the 5xx rate
    (weight 8) passing: a score of 80, Marginal. The bake that ends with the regression shown
    does not pass: the next step waits for a person, who rejects it, and the rejection restores
    the baseline. The canary's target group has data from its first step only (as in AWS), so
    the regression shows in the 10 % step's bake or the 50 % one's: the person is asked before
    the 50 % step or before the 100 % one."""
    answers = []

    def answer(detail_type, detail):
        if detail_type != "Approval Requested":
            return
        answers.append(detail["step"])
        done = sandbox.cli("reject", detail["executionArn"], "--reason", "p99 is half again the baseline's")
        assert done.returncode == 0, done.stderr

    with Sandbox(log=print) as sandbox:
        with slower_canary(sandbox) as alb:
            plan = compared_plan(sandbox, alb)
            plan["analysis"]["compare"]["onMarginal"] = "ask"
            # The 5xx rate weighs 8 of 10: the p99 and the slow requests both High leave the
            # check Marginal (80), which asks, not Fail.
            plan["analysis"]["compare"]["metrics"][1]["weight"] = 8
            plan["approval"] = {"timeoutSeconds": 300}
            time.sleep(compare.MIN_SAMPLES)
            arn = scenarios.start_manual(sandbox, plan, "green-ask")
            report = scenarios.watch(sandbox, arn, out=print, on_notification=answer)
    asked = [(s["number"], s["weight"]) for s in answers]
    assert asked in ([(2, 50)], [(3, 100)]), asked
    assert (report.status, report.error) == ("FAILED", "ApprovalRejected"), report
    assert "p99 is half again the baseline's" in report.cause
    assert report.max_canary == (10 if asked == [(2, 50)] else 50), "the asked step was never set"
    assert report.weights == BASELINE
    shifted = ["Traffic Shifted"] * (1 if asked == [(2, 50)] else 2)
    assert event_types(report) == ["Rollout Started", *shifted, "Approval Requested", "Rolled Back"]
    # The bake that showed the regression ended unsure and asked; never a failed check.
    assert report.states.count("Asked") == 1 and report.states.count("AskSetup") == 1, report.states
    assert "BakeCheckFailed" not in report.states


def test_slow_requests_beyond_the_baselines_own_p99_roll_a_slower_canary_back(tmp_path):
    """`slowerThan: {"baseline": "p99"}`: the threshold is the baseline target group's p99 over
    the last hour, read through moto's GetMetricData from the values the feed put. `plan check`
    says what it is now; the rollout's first compared check takes it, and a canary 1.5 times
    slower has its requests beyond it where the baseline has none: rolled back, the cause naming
    the derived threshold."""
    with Sandbox(log=captured) as sandbox:
        with slower_canary(sandbox) as alb:
            plan = compared_plan(sandbox, alb)
            plan["analysis"]["compare"]["metrics"] = [
                {"name": "slow requests", "alb": "latency", "slowerThan": {"baseline": "p99"}}]
            time.sleep(compare.MIN_SAMPLES)
            path = tmp_path / "plan.json"
            path.write_text(json.dumps(plan))
            checked = sandbox.cli("plan", "check", str(path))
            captured(checked.stdout + checked.stderr)
            assert checked.returncode == 0, checked.stdout + checked.stderr
            now = re.search(r"compare slow requests: slowerThan ([0-9.]+) s \(the baseline's p99 over the last hour\)",
                            checked.stdout)
            # The baseline's seconds have their p99 at 0.091 to 0.110 s (sandbox/compare.py).
            assert now and 0.09 <= float(now.group(1)) <= 0.11, checked.stdout
            arn = scenarios.start_manual(sandbox, plan, "green-derived")
            report = scenarios.watch(sandbox, arn, out=captured)
    assert (report.status, report.error) == ("FAILED", "CheckFailed"), report
    taken = re.search(r"the canary's requests slower than ([0-9.]+) against its share", report.cause)
    assert taken and 0.09 <= float(taken.group(1)) <= 0.11, report.cause
    assert "compare slow requests: High" in report.cause, report.cause
    assert report.weights == BASELINE
    assert report.max_canary <= 50, "100 % was never set"


def test_plan_check_says_which_steps_the_last_hours_traffic_leaves_short_of_periods(tmp_path):
    """`plan check` reads the last hour's `RequestCount` of the plan's target groups and says, step
    by step, how many periods with requests on both sides the comparison can expect: at 30
    requests a minute the 1 % step gets one in a quarter of its minutes and is said short (not
    refused); at 5,000 a minute every step is fine; the 100 % step compares nothing."""
    with Sandbox(log=captured) as sandbox:
        scenarios.create_green(sandbox)
        plan = scenarios.manual_plan(sandbox)
        plan["trafficTargets"] = plan["trafficTargets"][:1]
        plan["steps"] = [{"weight": 1}, {"weight": 10}, {"weight": 100}]
        plan["bake"] = {"seconds": 600, "checkIntervalSeconds": 60}
        plan["analysis"] = {"compare": {"periodSeconds": 60, "lookbackSeconds": 1200, "minSamples": 10,
                                        "metrics": [{"name": "5xx rate", "alb": "errorRate"}]}}
        path = tmp_path / "plan.json"
        path.write_text(json.dumps(plan))
        listener, stable = sandbox.world.listener, sandbox.world.blue_tg
        dimensions = [{"Name": "LoadBalancer", "Value": listener.split(":listener/", 1)[1].rsplit("/", 1)[0]},
                      {"Name": "TargetGroup", "Value": stable.rsplit(":", 1)[1]}]
        cloudwatch = sandbox.client("cloudwatch")

        def traffic(per_minute):
            now = int(time.time()) // 60 * 60
            # One call over 10 KiB: botocore gzips it, and the sandbox's front door (its IAM) and
            # moto read it as AWS does.
            cloudwatch.put_metric_data(Namespace="AWS/ApplicationELB", MetricData=[
                {"MetricName": "RequestCount", "Dimensions": dimensions, "Timestamp": now - 60 * minute,
                 "Value": per_minute, "Unit": "Count"} for minute in range(1, 60)])

        traffic(30)
        quiet = sandbox.cli("plan", "check", str(path))
        captured(quiet.stdout + quiet.stderr)
        assert quiet.returncode == 0, "an outlook is not a refusal"
        assert "? comparison outlook from the last 60 min of traffic: a median 60 s period had 30 request(s)" \
            in quiet.stdout, quiet.stdout
        first = next(line for line in quiet.stdout.splitlines() if line.strip().startswith("step 1 (1 %)"))
        assert "minSamples 10; the chance of enough is" in first and "extendBakeSeconds" in first, first
        assert re.search(r"step 2 \(10 %\): [0-9.]+ expected, minSamples 10$", quiet.stdout, re.M), quiet.stdout
        assert "step 3 (100 %): not compared (the baseline serves nothing)" in quiet.stdout, quiet.stdout
        as_json = sandbox.cli("plan", "check", str(path), "--output", "json")
        outlook = next(json.loads(line) for line in as_json.stdout.splitlines()
                       if '"comparisonOutlook"' in line)
        assert [s["short"] for s in outlook["steps"]] == [True, False, False], outlook
        # Unsure (null), as a check that may hold: not a refusal (false).
        assert outlook["ok"] is None and outlook["medianRequests"] == 30, outlook

        traffic(5000)  # the same minutes, added up: a median minute of 5,030 requests
        busy = sandbox.cli("plan", "check", str(path))
        assert "✓ comparison outlook from the last 60 min of traffic: a median 60 s period had 5030" \
            in busy.stdout, busy.stdout
        assert "the chance of enough" not in busy.stdout, busy.stdout

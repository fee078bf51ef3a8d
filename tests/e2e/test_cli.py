"""End to end: the operator CLI (`cluster-canary`) on the sandbox, as a person runs it against
a deployed stack. The live view of every other end-to-end test is `cluster-canary watch` too
(sandbox.scenarios.watch); `stopped` aborts with `cluster-canary abort`, test_gates.py approves
and rejects with it."""
import json
import os
import re
import pty
import select
import subprocess
import time

from helpers import BASELINE, PROMOTED, captured, stop_and_wait
from sandbox import scenarios
from sandbox.harness import CLI, REPO, Sandbox


def on_a_terminal(sandbox, *args, seconds):
    """Runs `cluster-canary ARGS...` with a pseudo-terminal as its stdout, for `seconds` or to
    its end; what it wrote there."""
    master, slave = pty.openpty()
    process = subprocess.Popen([str(CLI), *args], cwd=REPO, env={**os.environ, **sandbox.cli_env()},
                               stdout=slave, stderr=subprocess.DEVNULL)
    os.close(slave)
    output, deadline = b"", time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            if select.select([master], [], [], 0.2)[0]:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the program ended and closed the terminal
                    break
                if not chunk:
                    break
                output += chunk
            elif process.poll() is not None:
                break
    finally:
        process.kill()
        process.wait()
        os.close(master)
    return output.decode(errors="replace")


def plan_file(sandbox, tmp_path, **changes):
    scenarios.create_green(sandbox)
    plan = {**scenarios.manual_plan(sandbox), **changes}
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    return str(path)


def test_start_watch_promotes_and_a_finished_rollout_replays(tmp_path):
    with Sandbox(log=captured) as sandbox:
        plan = plan_file(sandbox, tmp_path)
        check = sandbox.cli("plan", "check", plan)
        captured(check.stdout)
        assert check.returncode == 0, check.stdout + check.stderr
        assert "✓ no other rollout shifts these targets" in check.stdout

        done = sandbox.cli("start", plan, "--name", "by-hand", "--watch", timeout=300)
        captured(done.stdout)
        assert done.returncode == 0, done.stdout + done.stderr
        lines = done.stdout.splitlines()
        arn = lines[0].removeprefix("started: ")
        assert arn.endswith(":execution:cluster-canary-rollout:by-hand")
        steps = [line for line in lines if line.startswith("step ")]
        assert [s.split(":")[0] for s in steps] == ["step 1/3", "step 2/3", "step 3/3"]
        assert steps[-1].endswith("-- read back: listener " + sandbox.world.listener.rsplit("/", 1)[-1]
                                  + " stable 0 / canary 100, app.example.com. stable 0 / canary 100")
        assert sum(line.startswith("  check ") for line in lines) == 9
        assert "outcome: SUCCEEDED" in lines
        assert scenarios.read_weights(sandbox) == PROMOTED

        # Replayed: the same story, with the weights each step set (not today's).
        replay = sandbox.cli("watch", arn)
        assert replay.returncode == 0, replay.stderr
        assert [line for line in replay.stdout.splitlines() if line.startswith("step 1/3")] == [
            "step 1/3: 10% to the canary -- set: listener " + sandbox.world.listener.rsplit("/", 1)[-1]
            + " stable 90 / canary 10, app.example.com. stable 90 / canary 10"]
        as_json = sandbox.cli("watch", arn, "--output", "json")
        updates = [json.loads(line) for line in as_json.stdout.splitlines()]
        assert [u["type"] for u in updates][-3:] == ["promoted", "ended", "weightsNow"]
        assert sum(u["type"] == "check" for u in updates) == 9

        listed = sandbox.cli("list")
        assert listed.returncode == 0, listed.stderr
        row = next(line for line in listed.stdout.splitlines() if line.startswith("by-hand"))
        assert row.split()[1:4] == ["us-east-1/green", "SUCCEEDED", "-"] and "promoted" in row

        # A promotion cannot be aborted: it says so, and nothing moves.
        refused = sandbox.cli("abort", arn)
        assert refused.returncode == 1
        assert "already promoted the canary: abort cannot undo a promotion" in refused.stderr, refused.stderr
        assert scenarios.read_weights(sandbox) == PROMOTED
        # Nor restored: its baseline would put all traffic back on the old cluster.
        refused = sandbox.cli("restore", arn, "--yes")
        assert refused.returncode == 1
        assert "promoted the canary: its baseline would put all traffic back on the old cluster" in refused.stderr, \
            refused.stderr
        assert "start a rollout towards the old cluster" in refused.stderr
        assert "Nothing was written; `--force` restores this baseline anyway" in refused.stderr
        assert scenarios.read_weights(sandbox) == PROMOTED
        # A person who means it: `--force` says what it overrides, and writes.
        forced = sandbox.cli("restore", arn, "--yes", "--force")
        captured(forced.stdout + forced.stderr)
        assert forced.returncode == 0, forced.stderr
        assert "warning (--force): " in forced.stdout and "promoted the canary" in forced.stdout, forced.stdout
        assert scenarios.read_weights(sandbox) == BASELINE

        # A second start with the same name is AWS's refusal, said plainly.
        again = sandbox.cli("start", plan, "--name", "by-hand")
        assert again.returncode == 1
        assert "ExecutionAlreadyExists" in again.stderr, again.stderr


def test_abort_says_how_to_restore_by_hand_when_the_safety_net_does_not_act(tmp_path):
    """While the SafetyNet rule's delivery is held (late, or the rule disabled in an account),
    nothing restores an aborted execution: `abort` says how to do it by hand."""
    with Sandbox(log=captured) as sandbox:
        plan = plan_file(sandbox, tmp_path)
        started = sandbox.cli("start", plan, "--name", "abort-me")
        assert started.returncode == 0, started.stderr
        arn = started.stdout.strip().removeprefix("started: ")
        deadline = time.monotonic() + 120
        while scenarios.read_weights(sandbox) == BASELINE:
            assert time.monotonic() < deadline, "the first step never came"
            time.sleep(0.5)

        # A second plan watching an alarm the running rollout's prefix (web-green-) matches:
        # `plan check` says one alarm would roll back both.
        overlapping = json.loads(open(plan).read())
        overlapping["analysis"]["alarms"] = {"names": ["web-green-5xx"]}
        other = tmp_path / "overlapping.json"
        other.write_text(json.dumps(overlapping))
        checked = sandbox.cli("plan", "check", str(other))
        captured(checked.stdout)
        assert (f"! running rollout {arn} watches prefix `web-green-`, which matches this plan's alarm "
                "`web-green-5xx`: one alarm's change rolls back both") in checked.stdout, checked.stdout

        # On a terminal the live view is coloured and keeps a status line redrawn in place.
        live = on_a_terminal(sandbox, "watch", arn, seconds=3)
        assert "\x1b[" in live, live
        assert re.search(r"\r\x1b\[2K… \w[^\r]* · step [123]/3 \(\d+%\)", live), live

        with sandbox.safety_net.held():
            aborted = sandbox.cli("abort", "--timeout", "4")  # the one running rollout
            captured(aborted.stdout + aborted.stderr)
            assert aborted.returncode == 1
            assert aborted.stdout.startswith(f"stopped {arn}")
            assert "the baseline is not back after 4 s" in aborted.stderr
            assert f"cluster-canary restore {arn}" in aborted.stderr, "the way back by hand"

            # A newer rollout of the same targets starts, and waits for an approval before its
            # first step: while it runs, restoring the aborted one could overwrite what it does,
            # so that is refused, naming it. Stopped, it moved nothing: no obstacle any more.
            halfway = scenarios.read_weights(sandbox)
            waiting = json.loads(open(plan).read())
            waiting["approval"] = {"beforeSteps": [waiting["steps"][0]["weight"]], "timeoutSeconds": 600}
            # It starts from the aborted one's weights: without this, its Prepare refuses them
            # (the canary already receives traffic) and it ends FAILED within a second, before
            # the restore below or the stop could see it running.
            waiting["rollback"] = {**waiting.get("rollback", {}), "allowCanaryInBaseline": True}
            waits = tmp_path / "waits.json"
            waits.write_text(json.dumps(waiting))
            newer = sandbox.cli("start", str(waits), "--name", "newer")
            assert newer.returncode == 0, newer.stderr
            newer_arn = newer.stdout.strip().removeprefix("started: ")
            sfn = sandbox.client("stepfunctions")
            deadline = time.monotonic() + 60
            while not any(e.get("stateEnteredEventDetails", {}).get("name") == "AwaitApproval"
                          for e in sfn.get_execution_history(executionArn=newer_arn, maxResults=1000)["events"]):
                assert time.monotonic() < deadline, "the newer rollout never waited for its approval"
                time.sleep(0.2)
            refused = sandbox.cli("restore", arn, "--yes")
            captured(refused.stdout + refused.stderr)
            assert refused.returncode == 1
            assert f"a newer rollout of the same targets ran or runs since {arn}: {newer_arn} (RUNNING, shifts " \
                in refused.stderr, refused.stderr
            assert f"a running one restores its own baseline when stopped (`cluster-canary abort {newer_arn}`)" \
                in refused.stderr, "restore refuses a running one: it is not pointed at"
            assert "restore that one instead" not in refused.stderr
            assert scenarios.read_weights(sandbox) == halfway, "nothing written"
            # Stopped once moto's engine runs it (a stop before its thread starts is overwritten by
            # the thread's RUNNING), and looked at once the stop shows.
            stop_and_wait(sandbox, newer_arn, deadline)
            nothing = sandbox.cli("restore", newer_arn, "--yes")
            assert nothing.returncode == 0, nothing.stderr
            assert "nothing to restore" in nothing.stdout, nothing.stdout
            assert scenarios.read_weights(sandbox) == halfway
            restored = sandbox.cli("restore", arn, "--yes")
            captured(restored.stdout + restored.stderr)
            assert restored.returncode == 0, restored.stderr
            assert (f"a newer rollout of the same targets moved nothing (it ended before its first step): "
                    f"{newer_arn} (ABORTED, shifts ") in restored.stdout, restored.stdout
            assert scenarios.read_weights(sandbox) == BASELINE
            # `abort` of the newer one, whose baseline (the halfway weights) is no longer there:
            # it moved nothing and its safety net writes nothing, so there is nothing to wait for
            # (not a wait that ends advising a restore that has nothing to restore).
            newer_aborted = sandbox.cli("abort", newer_arn, "--timeout", "4")
            assert newer_aborted.returncode == 0, newer_aborted.stderr
            assert newer_aborted.stdout.splitlines()[-1] == \
                "it never set a step (no traffic moved): nothing for the safety net to restore", newer_aborted.stdout
            assert scenarios.read_weights(sandbox) == BASELINE

        # The held deliveries arrive: the newer rollout moved nothing, so its safety net writes
        # nothing (its baseline, the aborted one's halfway weights, would undo the restore by
        # hand), and the aborted one's writes its baseline (already back by hand: the same
        # weights again).
        answer = sandbox.safety_net.answer_for(arn)
        assert answer["restored"] is True, json.dumps(answer)
        newer_answer = sandbox.safety_net.answer_for(newer_arn)
        assert newer_answer["restored"] is False, json.dumps(newer_answer)
        assert "before its first step: no traffic had moved" in newer_answer["reason"], newer_answer["reason"]
        again = sandbox.cli("abort", arn)
        assert again.returncode == 0, again.stderr
        assert again.stdout.splitlines()[0] == f"{arn} already ended ABORTED; checking the safety net restored the baseline"
        assert again.stdout.splitlines()[-1].startswith("baseline restored: listener ")
        assert scenarios.read_weights(sandbox) == BASELINE

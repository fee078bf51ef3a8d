import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# `import sandbox` from the repository root.
sys.path.insert(0, str(REPO))

from sandbox import scenarios  # noqa: E402


# The written budget for the largest execution state (canary_core::limits, through the
# generated schema/contract.json).
BUDGET = scenarios.CONTRACT["limits"]["stateBudgetBytes"]
LARGEST = {"bytes": 0, "where": None}


@pytest.fixture(autouse=True)
def every_execution_stays_under_the_state_budget(monkeypatch, request):
    """Every execution the tests watch: its largest state input/output or task result is
    recorded, and must stay under the budget."""
    watch = scenarios.watch

    def measured(*args, **kwargs):
        report = watch(*args, **kwargs)
        if report.largest_state > LARGEST["bytes"]:
            LARGEST.update(bytes=report.largest_state, where=f"{request.node.name}: {report.largest_state_at}")
        assert report.largest_state < BUDGET, (
            f"state of {report.largest_state} bytes at {report.largest_state_at}, over the budget of {BUDGET}"
        )
        return report

    monkeypatch.setattr(scenarios, "watch", measured)


def pytest_terminal_summary(terminalreporter):
    if LARGEST["where"]:
        terminalreporter.write_line(
            f"largest execution state: {LARGEST['bytes']} bytes (budget {BUDGET}) in {LARGEST['where']}"
        )


def pytest_sessionfinish(session):
    """Under pytest-xdist, a worker hands its largest state to the controller."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["largest_state"] = dict(LARGEST)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    largest = getattr(node, "workeroutput", {}).get("largest_state")
    if largest and largest["bytes"] > LARGEST["bytes"]:
        LARGEST.update(largest)

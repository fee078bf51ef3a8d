"""The comparison check's statistics fixture is scipy's own answer: scripts/scipy_cases.py run
again with the pinned scipy gives functions/canary-core/tests/fixtures/scipy_cases.json exactly
(canary-core's statistics_vs_scipy.rs checks the Rust side against that file)."""

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_fixture_is_what_scipy_says_now():
    fresh = subprocess.run([sys.executable, str(REPO / "scripts/scipy_cases.py")], check=True,
                           capture_output=True, text=True).stdout
    fixture = (REPO / "functions/canary-core/tests/fixtures/scipy_cases.json").read_text()
    assert json.loads(fresh) == json.loads(fixture), \
        "scipy disagrees with the fixture: run scripts/scipy_cases.py > functions/canary-core/tests/fixtures/scipy_cases.json"

"""The comparison evidence's fixture is the references' own answer: scripts/savvi_cases.py run
again with the pinned savvi and scipy gives functions/canary-core/tests/fixtures/savvi_cases.json
exactly (canary-core's statistics_vs_savvi.rs checks the Rust side against that file)."""

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_fixture_is_what_savvi_and_scipy_say_now():
    fresh = subprocess.run([sys.executable, str(REPO / "scripts/savvi_cases.py")], check=True,
                           capture_output=True, text=True).stdout
    fixture = (REPO / "functions/canary-core/tests/fixtures/savvi_cases.json").read_text()
    assert json.loads(fresh) == json.loads(fixture), \
        "savvi or scipy disagrees with the fixture: run scripts/savvi_cases.py > functions/canary-core/tests/fixtures/savvi_cases.json"

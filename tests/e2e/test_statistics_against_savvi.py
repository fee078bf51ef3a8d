"""The comparison evidence's fixture is the references' own answer: scripts/savvi_cases.py run
again with the pinned savvi and scipy gives functions/canary-core/tests/fixtures/savvi_cases.json
(to the last few bits of a float: see `same`; canary-core's statistics_vs_savvi.rs checks the
Rust side against that file)."""

import json
import math
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_fixture_is_what_savvi_and_scipy_say_now():
    fresh = subprocess.run([sys.executable, str(REPO / "scripts/savvi_cases.py")], check=True,
                           capture_output=True, text=True).stdout
    fixture = (REPO / "functions/canary-core/tests/fixtures/savvi_cases.json").read_text()
    assert same(json.loads(fresh), json.loads(fixture)), \
        "savvi or scipy disagrees with the fixture: run scripts/savvi_cases.py > functions/canary-core/tests/fixtures/savvi_cases.json"


def same(fresh, fixture):
    """Equal, a float to within a few units in the last place: the same savvi and scipy give
    log evidence that differs there from one machine's floating point to another's (seen:
    4e-16), which is not a disagreement; the Rust side holds its own tolerance."""
    if isinstance(fresh, float) and isinstance(fixture, float):
        return math.isclose(fresh, fixture, rel_tol=1e-12, abs_tol=1e-12)
    if isinstance(fresh, dict) and isinstance(fixture, dict):
        return fresh.keys() == fixture.keys() and all(same(fresh[k], fixture[k]) for k in fresh)
    if isinstance(fresh, list) and isinstance(fixture, list):
        return len(fresh) == len(fixture) and all(same(a, b) for a, b in zip(fresh, fixture))
    return fresh == fixture

"""Seeded histories in CI (sandbox/histories.py): a fixed few, each run checked against the
promises. Between them, in the 60-history run docs/testing.md reports, every kind of happening
occurred (an alarm before a bake, its clearing, a foreign write during the last bake, an abort,
a late safety net, ELBv2 and Lambda throttles, a second rollout of the same targets). Longer
runs: `python -m sandbox.histories --seeds N`."""
import pytest

from helpers import captured
from sandbox import histories

# Each seed's story, pinned: a change to the generator changes what a seed replays, and the
# seeds (here and in docs/testing.md) must then be chosen again.
CI_HISTORIES = {
    43: "seed 43: steps [100], ALB + Route 53; foreign-write[52, 48] after Evaluate #2; "
        "alarm-clears after Evaluate #2; second-rollout after Restore #1",
    49: "seed 49: steps [100], ALB; lambda-throttle after PrepareTraffic #1; throttle after Restore #1; "
        "alarm after PrepareTraffic #1",
    54: "seed 54: steps [100], ALB; late-safety-net after Evaluate #2; second-rollout after Evaluate #2; "
        "abort after Evaluate #2; throttle after Restore #1",
}


def test_a_seed_replays_the_same_story():
    for seed, story in CI_HISTORIES.items():
        assert str(histories.generate(seed)) == story


@pytest.mark.parametrize("seed", sorted(CI_HISTORIES))
def test_a_seeded_history_keeps_every_promise(seed):
    history = histories.generate(seed)
    captured(str(history))
    record = histories.run(history, out=captured)
    captured("happened: " + (", ".join(str(h) for h, _ in record.done) or "nothing"))
    assert histories.violations(history, record) == []

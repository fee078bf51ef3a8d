"""`scripts/sandbox.sh --template PATH` deploys cluster-canary's stack from another template;
given one that is not cluster-canary's (the example environment, say), it says so in a
sentence and deploys nothing, rather than failing half-way with a traceback."""
import subprocess
import sys

from sandbox.harness import REPO


def test_a_template_that_is_not_the_stack_is_refused_in_a_sentence():
    run = subprocess.run([sys.executable, "-m", "sandbox.run", "--template", "infra/example-environment.yaml"],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    assert "infra/example-environment.yaml is not the cluster-canary stack" in run.stderr, run.stderr
    assert "nothing was deployed" in run.stderr

"""Runs a rollout end to end on the local sandbox and shows it live.

    python -m sandbox.run [--scenario happy|rollback|apps-unhealthy|stopped|approval|prometheus|prometheus-healthy|datadog]
                          [--verbose] [--template PATH]

The stack is deployed from `--template` (default template.yaml), as `sam deploy` would deploy
it: a changed template can be tried before it is deployed anywhere.

`approval` stops before 100 % and prints the command that approves (run it in another
terminal); the rollout goes on when it is run.

Exits 0 when the rollout succeeded (green takes all traffic; a fleet: every wave ran), 1 otherwise; every process it
started is stopped on the way out, Ctrl-C included.
"""
import argparse
import signal
import sys
from pathlib import Path

from .harness import REPO
from .intake import NoRolloutStarted
from .scenarios import SCENARIOS, run
from .stack import NotTheStack


def interrupt(signum, frame):
    """SIGTERM as Ctrl-C: unwind through the sandbox's cleanup."""
    raise KeyboardInterrupt


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", choices=SCENARIOS, default="happy")
    parser.add_argument("--verbose", action="store_true",
                        help="show every reason a check's verdict carries, not one short reason per check")
    parser.add_argument("--template", type=Path, default=REPO / "template.yaml",
                        help="the SAM template the sandbox deploys its stack from (default: template.yaml)")
    args = parser.parse_args()
    if not args.template.is_file():
        parser.error(f"--template {args.template}: no such file")
    signal.signal(signal.SIGTERM, interrupt)
    try:
        report = run(args.scenario, out=lambda line: print(line, flush=True), verbose=args.verbose,
                     template=args.template)
    except KeyboardInterrupt:
        print("interrupted; sandbox stopped", file=sys.stderr)
        return 130
    except NoRolloutStarted as e:
        print(f"sandbox: {e}; the sandbox is stopped", file=sys.stderr)
        return 1
    except NotTheStack as e:
        print(f"sandbox: {e}; nothing was deployed, and the sandbox is stopped", file=sys.stderr)
        return 2
    succeeded = report.status == "SUCCEEDED"
    if args.scenario.startswith("fleet"):
        print("fleet completed: every cell promoted" if succeeded else "fleet did not complete (see above)")
    else:
        print("rollout succeeded: green takes all traffic" if succeeded else "rollout did not succeed (see above)")
    return 0 if succeeded else 1


if __name__ == "__main__":
    sys.exit(main())

"""The local sandbox: a whole rollout on this machine, no AWS and no Docker (see harness.py)."""

"""moto servers forked from one process that has imported moto and the harness's patches once
(tests/moto/moto_server.py `--fork-servers`), instead of a new interpreter importing them for
every sandbox: about two of a sandbox's seven seconds of start-up, most of them CPU, which the
end-to-end tests' seven workers share two cores for (docs/testing.md).

Nothing is shared between sandboxes but the imported code: each server is forked before it has
served a request, runs in its own session, and ends with its sandbox. One forking process per
Python process that starts sandboxes (a test worker, `scripts/sandbox.sh`), started on first use.
"""
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
_lock = threading.Lock()
_forker = []


class ForkedServer:
    """A forked server, ended as `subprocess.Popen` ends one (the sandbox's stop() does)."""

    def __init__(self, pid):
        self.pid = pid
        self.returncode = None

    def poll(self):
        if self.returncode is None:
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                # Reaped by the forking process: how it ended is not known here.
                self.returncode = -1
        return self.returncode

    def wait(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"moto server {self.pid}", timeout)
            time.sleep(0.05)
        return self.returncode


def _start_forker():
    return subprocess.Popen(
        [sys.executable, str(REPO / "tests/moto/moto_server.py"), "--fork-servers", "-H", "127.0.0.1"],
        cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
        # Its own session: a Ctrl-C to the sandbox's terminal reaches the sandbox, which ends it.
        start_new_session=True)


def _ask(request):
    """One server from the forking process (started if there is none): its answer, or "" when
    the forking process is gone."""
    if not _forker or _forker[0].poll() is not None:
        _forker[:] = [_start_forker()]
    try:
        _forker[0].stdin.write(request)
        _forker[0].stdin.flush()
        answer = _forker[0].stdout.readline()
    except BrokenPipeError:
        answer = ""
    if not answer:
        _forker[0].wait()
    return answer


def start(env, log):
    """A fresh moto server with this process's environment and `env` as its environment (as a
    process this one started would have), and its output in `log`: (ForkedServer, endpoint)."""
    request = json.dumps({"env": {**os.environ, **env}, "log": str(log)}) + "\n"
    with _lock:
        # A forking process that is gone (killed with a test's process group, say) is replaced once.
        answer = _ask(request) or _ask(request)
    if not answer:
        raise RuntimeError("moto's forking server (tests/moto/moto_server.py --fork-servers) ended")
    answer = json.loads(answer)
    if "endpoint" not in answer:
        raise RuntimeError(f"moto did not start; see {log}")
    return ForkedServer(answer["pid"]), answer["endpoint"]

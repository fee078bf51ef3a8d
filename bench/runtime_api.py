"""A small fake of the Lambda Runtime API (the part a function's runtime loop uses), to time a
function's cold start from outside: it records when the process first asks for an invocation
(init done), hands it one event, and records when the answer arrives.

  GET  /2018-06-01/runtime/invocation/next            -> the event (first time), then waits
  POST /2018-06-01/runtime/invocation/{id}/response   -> the answer
  POST /2018-06-01/runtime/invocation/{id}/error      -> a function error
  POST /2018-06-01/runtime/init/error                 -> an init error
"""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REQUEST_ID = "bench-0001"


class FakeRuntimeApi:
    def __init__(self, event):
        self.event = json.dumps(event).encode()
        self.first_next = None  # perf_counter when init ended
        self.event_sent = None
        self.answered = None
        self.answer = None  # ("response" | "error", body)
        self.done = threading.Event()
        runtime = self

        class Handler(BaseHTTPRequestHandler):
            disable_nagle_algorithm = True  # no 40 ms wait per answer (sandbox/front_door.py)
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                if not self.path.endswith("/invocation/next"):
                    return self.reply(404, b"{}")
                if runtime.first_next is not None:
                    runtime.done.wait(30)  # one invocation per process: hold the next poll
                    return self.reply(500, b"{}")
                runtime.first_next = time.perf_counter()
                self.reply(200, runtime.event, {
                    "Lambda-Runtime-Aws-Request-Id": REQUEST_ID,
                    "Lambda-Runtime-Deadline-Ms": str(int(time.time() * 1000) + 60_000),
                    "Lambda-Runtime-Invoked-Function-Arn": "arn:aws:lambda:us-east-1:123456789012:function:bench",
                    "Lambda-Runtime-Trace-Id": "Root=1-00000000-000000000000000000000000",
                })
                runtime.event_sent = time.perf_counter()

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                kind = self.path.rsplit("/", 1)[-1]
                runtime.answered = time.perf_counter()
                runtime.answer = (kind, body.decode(errors="replace"))
                self.reply(202, b"{}")
                runtime.done.set()

            def reply(self, status, body, headers=None):
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        # The benchmark kills the process while its next poll waits: a reset, not an error.
        self.server.handle_error = lambda request, client_address: None
        self.address = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.done.set()
        self.server.shutdown()
        self.server.server_close()

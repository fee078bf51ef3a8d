"""Lambda, running the stack's functions as Lambda runs them.

moto creates the functions but runs them only in Docker, which these machines lack. This plays
Lambda's part for the functions the stack created (`Stack.functions()`):

- the code is the package the stack was created from (the zip in moto's S3), unpacked; its
  `bootstrap` runs;
- each instance is a process with exactly the environment the function's configuration in
  moto holds, Lambda's own variables (`AWS_LAMBDA_FUNCTION_NAME`, `_MEMORY_SIZE`, …,
  `AWS_LAMBDA_RUNTIME_API`) and the credentials of the function's role (STS `AssumeRole` in
  moto), never the sandbox's; the one addition is `AWS_ENDPOINT_URL` (the front door), as the
  sandbox's only way to AWS;
- each instance speaks the Lambda runtime API (`/2018-06-01/runtime/...`) to a server of its
  own and serves one invocation at a time; when every instance is busy another starts;
- an invocation still running at the function's `Timeout` ends its instance and is answered
  as Lambda answers (`Sandbox.Timedout`, a function error);
- `Invoke` answers as Lambda's API does: the payload, or 200 with `X-Amz-Function-Error:
  Unhandled` and the runtime's error document; 404 `ResourceNotFoundException` for a function
  the stack does not have; `X-Amz-Invocation-Type: Event` is queued and answered 202;
- a synchronous request over Lambda's 6 MB payload limit is refused (413
  `RequestTooLargeException`), and an answer over it is the function error
  `Function.ResponseSizeTooLarge`, as Lambda answers.

- an asynchronous invocation that ends in a function error is tried again up to the function's
  `MaximumRetryAttempts` (its EventInvokeConfig; 2 without one), Lambda's minute and two minutes
  between tries scaled to `ASYNC_RETRY_DELAYS` seconds; one that still fails has Lambda's record
  of it (`requestPayload`, `responsePayload`, `condition: RetriesExhausted`) sent to the
  function's on-failure destination (an SQS queue) as the function's role, as Lambda sends it.

Not modelled: the memory limit (the size is passed, not enforced), reserved concurrency,
freezing between invocations, extensions, the asynchronous payload limit, `MaximumEventAgeInSeconds`,
throttled asynchronous invocations, on-success destinations and destinations other than SQS.
"""
import json
import os
import queue
import shutil
import subprocess
import threading
import time
import uuid
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

import boto3

INVOKE_PATH = "/2015-03-31/functions/"
# Lambda waits about a minute before it tries a failed asynchronous invocation again, and about
# two before the last try; the sandbox waits seconds, in the same proportion.
ASYNC_RETRY_DELAYS = (1.0, 2.0)
# How often Lambda tries a failed asynchronous invocation again without an EventInvokeConfig.
DEFAULT_ASYNC_RETRIES = 2
# Lambda's limit on a synchronous invocation's request and response payloads.
MAX_PAYLOAD_BYTES = 6 * 1024 * 1024
RUNTIME = "/2018-06-01/runtime"


def reply(handler, status, body=b"", headers=()):
    """An HTTP answer with a body; nothing if the caller has gone (an instance stopped or timed
    out while it waited)."""
    try:
        handler.send_response(status)
        for key, value in headers:
            handler.send_header(key, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)
    except OSError:
        pass


def function_name(name_or_arn):
    """`arn:aws:lambda:<region>:<account>:function:<name>[:qualifier]` or `<name>` -> `<name>`."""
    parts = name_or_arn.split(":")
    if name_or_arn.startswith("arn:") and len(parts) >= 7:
        return parts[6]
    return name_or_arn.split(":")[0]


class Invocation:
    def __init__(self, payload, function_arn, deadline):
        self.id = str(uuid.uuid4())
        self.payload = payload
        self.function_arn = function_arn
        self.deadline = deadline
        self.done = threading.Event()
        self.result = None  # (error type or None, body bytes)

    def finish(self, error_type, body):
        if not self.done.is_set():
            self.result = (error_type, body)
            self.done.set()


class Instance:
    """One process of a function and the runtime API it polls."""

    def __init__(self, function, log):
        self.function = function
        self.invocations = queue.Queue()
        self.current = None
        self.stopped = False
        instance = self

        class Runtime(BaseHTTPRequestHandler):
            disable_nagle_algorithm = True  # no 40 ms wait per answer (sandbox/front_door.py)
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):
                pass

            def do_GET(self):
                if self.path != f"{RUNTIME}/invocation/next":
                    return reply(self, 404)
                invocation = instance.invocations.get()
                if invocation is None:  # the instance is stopping
                    return reply(self, 410)
                instance.current = invocation
                reply(self, 200, invocation.payload, [
                    ("Lambda-Runtime-Aws-Request-Id", invocation.id),
                    ("Lambda-Runtime-Deadline-Ms", str(int(invocation.deadline * 1000))),
                    ("Lambda-Runtime-Invoked-Function-Arn", invocation.function_arn),
                    ("Lambda-Runtime-Trace-Id", f"Root=1-{uuid.uuid4().hex[:8]}-{uuid.uuid4().hex[:24]}"),
                    ("Content-Type", "application/json"),
                ])

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                parts = self.path.removeprefix(RUNTIME + "/").split("/")
                invocation = instance.current
                if parts[:1] == ["init"] and parts[1:] == ["error"]:
                    log(f"{instance.function.name}: init error: {body.decode(errors='replace')}")
                    return reply(self, 202)
                if len(parts) != 3 or parts[0] != "invocation" or invocation is None or parts[1] != invocation.id:
                    return reply(self, 400)
                if parts[2] == "response":
                    invocation.finish(None, body)
                elif parts[2] == "error":
                    invocation.finish("Unhandled", body)
                else:
                    return reply(self, 404)
                instance.current = None
                reply(self, 202)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Runtime)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        environment = {
            **function.environment,
            "AWS_LAMBDA_RUNTIME_API": f"127.0.0.1:{self.server.server_address[1]}",
        }
        self.process = subprocess.Popen(
            [str(function.code / "bootstrap")], cwd=function.code, env=environment,
            stdout=log.file, stderr=log.file, start_new_session=True)

    def run(self, invocation):
        self.invocations.put(invocation)
        while not invocation.done.wait(timeout=0.1):
            if self.process.poll() is not None:
                invocation.finish("Unhandled", json.dumps({
                    "errorType": "Runtime.ExitError",
                    "errorMessage": f"RequestId: {invocation.id} Error: Runtime exited with error: "
                                    f"exit status {self.process.returncode}",
                }).encode())
            elif time.time() >= invocation.deadline:
                # Lambda ends the execution environment at the timeout.
                self.stop()
                invocation.finish("Unhandled", json.dumps({
                    "errorType": "Sandbox.Timedout",
                    "errorMessage": f"RequestId: {invocation.id} Error: Task timed out after "
                                    f"{self.function.timeout:.2f} seconds",
                }).encode())

    def alive(self):
        return self.process.poll() is None

    def stop(self):
        if self.stopped:
            return
        self.stopped = True
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, 9)
            except ProcessLookupError:
                pass
            self.process.wait()
        self.invocations.put(None)
        self.server.shutdown()
        self.server.server_close()


class Function:
    def __init__(self, name, arn, code, environment, timeout, retries=DEFAULT_ASYNC_RETRIES, on_failure=None):
        self.name = name
        self.arn = arn
        self.code = code
        self.environment = environment
        self.timeout = timeout
        # Its asynchronous invocations: tries after the first, and where a failed one goes.
        self.retries = retries
        self.on_failure = on_failure
        self.idle = []
        self.lock = threading.Lock()
        self.instances = []


class FunctionLog:
    """Every instance's output, in one file (the functions' JSON logs)."""

    def __init__(self, path):
        self.file = open(path, "ab", buffering=0)

    def __call__(self, line):
        self.file.write((json.dumps({"sandbox": line}) + "\n").encode())


class LambdaService:
    """The functions of `stack` (a `stack.Stack`); `client(service)` a boto3 client on the
    sandbox; `endpoint` where the functions reach AWS; `sandbox_environment` what else the
    sandbox adds to every function's environment (its stand-ins' endpoints)."""

    def __init__(self, client, stack, endpoint, region, run_dir, sandbox_environment):
        self.log = FunctionLog(os.path.join(run_dir, "functions.log"))
        self.functions = {}
        lambda_client, sts, s3 = client("lambda"), client("sts"), client("s3")
        for name, (bucket, key) in stack.functions().values():
            configuration = lambda_client.get_function_configuration(FunctionName=name)
            code = Path(run_dir) / "functions" / name
            code.mkdir(parents=True)
            archive = code.with_suffix(".zip")
            s3.download_file(bucket, key, str(archive))
            with zipfile.ZipFile(archive) as unpacked:
                unpacked.extractall(code)
            (code / "bootstrap").chmod(0o755)
            credentials = sts.assume_role(RoleArn=configuration["Role"], RoleSessionName=name)["Credentials"]
            environment = {
                **configuration.get("Environment", {}).get("Variables", {}),
                "AWS_ACCESS_KEY_ID": credentials["AccessKeyId"],
                "AWS_SECRET_ACCESS_KEY": credentials["SecretAccessKey"],
                "AWS_SESSION_TOKEN": credentials["SessionToken"],
                "AWS_REGION": region,
                "AWS_DEFAULT_REGION": region,
                "AWS_LAMBDA_FUNCTION_NAME": name,
                "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
                "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(configuration.get("MemorySize", 128)),
                "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{name}",
                "AWS_LAMBDA_LOG_STREAM_NAME": time.strftime("%Y/%m/%d/[$LATEST]") + uuid.uuid4().hex,
                "LAMBDA_TASK_ROOT": str(code),
                "PATH": "/usr/local/bin:/usr/bin:/bin",
                "TZ": ":UTC",
                # What the sandbox adds: AWS is the front door, and its other stand-ins'
                # endpoints (sandbox_environment).
                "AWS_ENDPOINT_URL": endpoint,
                "AWS_EC2_METADATA_DISABLED": "true",
                **sandbox_environment,
            }
            try:
                asynchronous = lambda_client.get_function_event_invoke_config(FunctionName=name)
            except lambda_client.exceptions.ResourceNotFoundException:
                asynchronous = {}
            self.functions[name] = Function(
                name, configuration["FunctionArn"], code, environment, configuration.get("Timeout", 3),
                asynchronous.get("MaximumRetryAttempts", DEFAULT_ASYNC_RETRIES),
                asynchronous.get("DestinationConfig", {}).get("OnFailure", {}).get("Destination"))
        self.endpoint = endpoint
        service = self

        class Api(BaseHTTPRequestHandler):
            disable_nagle_algorithm = True  # no 40 ms wait per answer (sandbox/front_door.py)
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                path = unquote(self.path.split("?")[0])
                name = function_name(path.removeprefix(INVOKE_PATH).split("/")[0]) if path.startswith(INVOKE_PATH) else ""
                function = service.functions.get(name)
                headers = [("x-amzn-RequestId", str(uuid.uuid4()))]
                if function is None:
                    message = json.dumps({"Type": "User", "message": f"Function not found: {name}"}).encode()
                    return reply(self, 404, message, headers + [("x-amzn-ErrorType", "ResourceNotFoundException")])
                if len(body) > MAX_PAYLOAD_BYTES and self.headers.get("X-Amz-Invocation-Type") != "Event":
                    message = json.dumps({"Type": "User", "message": f"Request must be smaller than {MAX_PAYLOAD_BYTES} "
                                                                     "bytes for the InvokeFunction operation"}).encode()
                    return reply(self, 413, message, headers + [("x-amzn-ErrorType", "RequestTooLargeException")])
                if self.headers.get("X-Amz-Invocation-Type") == "Event":
                    threading.Thread(target=service.invoke_async, daemon=True,
                                     args=(function.name, body, lambda: service.invoke(function, body))).start()
                    return reply(self, 202, b"", headers)
                error, payload = service.invoke(function, body)
                if error:
                    headers.append(("X-Amz-Function-Error", error))
                reply(self, 200, payload, headers + [("Content-Type", "application/json")])

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Api)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def invoke(self, function, payload):
        """Runs one invocation on an idle instance, or a new one; (function error, payload)."""
        with function.lock:
            instance = next((i for i in function.idle if i.alive()), None)
            if instance is not None:
                function.idle.remove(instance)
        if instance is None:
            instance = Instance(function, self.log)
            function.instances.append(instance)
        invocation = Invocation(payload or b"{}", function.arn, time.time() + function.timeout)
        instance.run(invocation)
        if instance.alive():
            with function.lock:
                function.idle.append(instance)
        else:
            instance.stop()
        error, answer = invocation.result
        if len(answer) > MAX_PAYLOAD_BYTES:
            return "Unhandled", json.dumps({
                "errorType": "Function.ResponseSizeTooLarge",
                "errorMessage": f"Response payload size exceeded maximum allowed payload size ({MAX_PAYLOAD_BYTES} bytes).",
            }).encode()
        return error, answer

    def invoke_async(self, name, payload, attempt):
        """What Lambda does with an asynchronous invocation of the function `name` (with
        `payload`, bytes): `attempt()` runs it once, giving (function error, answer); a function
        error is tried again up to the function's retries, and one that still fails goes to its
        on-failure destination. The last (function error, answer)."""
        function = self.functions[function_name(name)]
        for tries in range(function.retries + 1):
            if tries:
                time.sleep(ASYNC_RETRY_DELAYS[min(tries, len(ASYNC_RETRY_DELAYS)) - 1])
            error, answer = attempt()
            if not error:
                return error, answer
        if function.on_failure:
            self.send_failure(function, payload, error, answer, tries + 1)
        return error, answer

    def send_failure(self, function, payload, error, answer, count):
        """Lambda's record of an asynchronous invocation that failed every try, sent to the
        function's on-failure destination (SQS) with the function's role, as Lambda sends it."""
        def document(data):
            """A payload or answer as JSON (the harness's tries give answers already read)."""
            if not isinstance(data, (bytes, str)):
                return data
            try:
                return json.loads(data or b"null")
            except ValueError:
                return (data or b"").decode(errors="replace")

        record = {
            "version": "1.0",
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
            "requestContext": {"requestId": str(uuid.uuid4()), "functionArn": f"{function.arn}:$LATEST",
                               "condition": "RetriesExhausted", "approximateInvokeCount": count},
            "requestPayload": document(payload),
            "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": error},
            "responsePayload": document(answer),
        }
        _, _, _, region, account, queue = function.on_failure.split(":", 5)
        credentials = function.environment
        sqs = boto3.client("sqs", region_name=region, endpoint_url=self.endpoint,
                           aws_access_key_id=credentials["AWS_ACCESS_KEY_ID"],
                           aws_secret_access_key=credentials["AWS_SECRET_ACCESS_KEY"],
                           aws_session_token=credentials["AWS_SESSION_TOKEN"])
        try:
            sqs.send_message(QueueUrl=f"{self.endpoint}/{account}/{queue}", MessageBody=json.dumps(record))
        except Exception as e:  # Lambda drops the record; the sandbox says so
            self.log(f"{function.name}: the failed invocation's record could not be sent to {function.on_failure}: {e}")

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
        for function in self.functions.values():
            for instance in function.instances:
                instance.stop()
        shutil.rmtree(Path(self.log.file.name).parent / "functions", ignore_errors=True)

"""The sandbox's single AWS endpoint, in front of moto and the sandbox's Lambda.

moto's Step Functions engine and EventBridge invoke Lambda functions at
http://localhost:$MOTO_PORT; the functions call AWS at $AWS_ENDPOINT_URL. Both point here:
  POST /2015-03-31/functions/<name or ARN>/invocations  -> the sandbox's Lambda (lambda_service.py)
  anything else                                         -> moto
An asynchronous invocation (`X-Amz-Invocation-Type: Event`) of a function a test intercepts
(`intercept_async`) is handed to it instead: the alarm events' queue does so.
Every request signed by an assumed role (the functions', the state machine's) is first
authorized as IAM would (iam.py); a refused one is answered AccessDenied and goes no further.
"""
import http.client
import json
import re
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

import cbor2

from .iam import Authorizer, NotModelled, Request, service_models
from .lambda_service import reply

INVOKE = re.compile(r"^/2015-03-31/functions/([^/?]+)/invocations")
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-authorization"}


def function_name(name_or_arn):
    """`arn:aws:lambda:us-east-1:123456789012:function:shift-weights[:qualifier]` -> `shift-weights`."""
    parts = name_or_arn.split(":")
    if name_or_arn.startswith("arn:") and len(parts) >= 7:
        return parts[6]
    return name_or_arn


def is_invocation(method, path, body):
    """A fault's predicate: any Lambda Invoke (the state machine's, a rule's, the harness's)."""
    return method == "POST" and path.endswith("/invocations")


def lambda_throttled():
    """Lambda's answer to an Invoke it throttles (a fault's answer): 429
    TooManyRequestsException, with the request id every AWS answer carries."""
    return (429, [("Content-Type", "application/json"), ("x-amzn-ErrorType", "TooManyRequestsException"),
                  ("x-amzn-RequestId", str(uuid.uuid4()))],
            b'{"Type": "User", "message": "Rate exceeded", "Reason": "ReservedFunctionConcurrentInvocationLimitExceeded"}')


def lambda_service_exception():
    """Lambda's answer when it fails on its side (500 ServiceException): retried by the state
    machine (`Lambda.ServiceException`)."""
    return (500, [("Content-Type", "application/json"), ("x-amzn-ErrorType", "ServiceException"),
                  ("x-amzn-RequestId", str(uuid.uuid4()))],
            b'{"Type": "Service", "Message": "An internal error occurred"}')


def cloudwatch_throttled():
    """CloudWatch's throttle in the protocol the SDKs speak to it (Smithy RPC v2 CBOR; as an
    awsQueryCompatible service it names the query error in a header too)."""
    return (400, [("Content-Type", "application/cbor"), ("smithy-protocol", "rpc-v2-cbor"),
                  ("x-amzn-query-error", "Throttling;Sender"), ("x-amzn-RequestId", str(uuid.uuid4()))],
            cbor2.dumps({"__type": "com.amazonaws.cloudwatch#Throttling", "message": "Rate exceeded"}))


def query_throttled():
    """A query-protocol service's (ELBv2's) throttle, as a fault's answer."""
    request_id = str(uuid.uuid4())
    return (400, [("Content-Type", "text/xml"), ("x-amzn-RequestId", request_id)],
            b"<ErrorResponse><Error><Type>Sender</Type><Code>Throttling</Code><Message>Rate exceeded</Message>"
            b"</Error><RequestId>" + request_id.encode() + b"</RequestId></ErrorResponse>")


def route53_throttled():
    """Route 53's throttle (REST-XML): 400 Throttling, retried by the SDKs."""
    request_id = str(uuid.uuid4())
    return (400, [("Content-Type", "text/xml"), ("x-amzn-RequestId", request_id)],
            b'<?xml version="1.0"?>\n<ErrorResponse xmlns="https://route53.amazonaws.com/doc/2013-04-01/">'
            b"<Error><Type>Sender</Type><Code>Throttling</Code><Message>Rate exceeded</Message></Error>"
            b"<RequestId>" + request_id.encode() + b"</RequestId></ErrorResponse>")


def lattice_throttled():
    """VPC Lattice's throttle (REST-JSON): 429 ThrottlingException, its code in the
    `x-amzn-ErrorType` header and a `message`, as the API reference's error shape has it."""
    return (429, [("Content-Type", "application/json"), ("x-amzn-ErrorType", "ThrottlingException"),
                  ("x-amzn-RequestId", str(uuid.uuid4()))],
            b'{"message": "Rate exceeded"}')


def json_error(code, message, status=400):
    """A JSON 1.1 service's error (Global Accelerator's), as a fault's answer."""
    return (status, [("Content-Type", "application/x-amz-json-1.1"), ("x-amzn-RequestId", str(uuid.uuid4()))],
            json.dumps({"__type": code, "Message": message}).encode())


def route53_pending(change_id):
    """Route 53's GetChange answer for a change not yet propagated to its servers (PENDING)."""
    return (200, [("Content-Type", "text/xml"), ("x-amzn-RequestId", str(uuid.uuid4()))],
            b'<?xml version="1.0"?>\n<GetChangeResponse xmlns="https://route53.amazonaws.com/doc/2013-04-01/">'
            b"<ChangeInfo><Id>/change/" + change_id.encode() + b"</Id><Status>PENDING</Status>"
            b"<SubmittedAt>" + time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()).encode()
            + b"</SubmittedAt></ChangeInfo></GetChangeResponse>")


def api_call(method, path, headers, body):
    """(service, action) of an AWS request as botocore's service models name them (read as the
    sandbox's IAM reads them); for one no model answers (an unsigned call), `?` or its signing
    name, and its method and path."""
    request = Request(method, path, headers, body)
    try:
        return request.signing_name, service_models().operation(request)[1].name
    except NotModelled:
        return request.signing_name or "?", f"{method} {unquote(path)}"


class FrontDoor:
    """`faults`: a list the tests append to, to make the front door answer a request itself
    (a throttle, say) instead of forwarding it: entries are [predicate(method, path, body),
    times, (status, headers, body)], used up front to back; the predicate may set the answer
    before it returns True (the tests' fake hook functions do).
    `lost`: entries of the same shape, matched after the request was forwarded: the call ran,
    and its answer is replaced by the entry's (a reply lost on the way back; the caller retries,
    so the call is delivered twice).
    Neither applies to an asynchronous invocation (EventBridge's deliveries to the stack's
    functions): EventBridge retries a throttled or failed delivery for up to a day, which the
    sandbox does not model, so a fault there would lose the event instead.
    `requests`: every request it forwarded, as (user agent, service, action), in order (the
    benchmark counts the functions' AWS calls from it)."""

    def __init__(self):
        self.faults = []
        self.lost = []
        self.requests = []
        self.authorizer = None
        self.handler = type(
            "Handler", (_Handler,),
            {"faults": self.faults, "lost": self.lost, "requests": self.requests, "async_takers": {}},
        )
        # A port of the kernel's choosing: moto has to be told this one before it starts.
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self.handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def forward_aws_to(self, moto_endpoint):
        """Where moto listens, once it has started (it is told the front door's port first);
        from then on the assumed roles' requests are authorized against their policies there."""
        self.handler.moto_port = int(moto_endpoint.rsplit(":", 1)[1])
        self.handler.authorizer = self.authorizer = Authorizer(moto_endpoint)

    def forward_invocations_to(self, lambda_port):
        """Where the sandbox's Lambda listens, once the stack's functions are known."""
        self.handler.lambda_port = lambda_port

    def intercept_async(self, function_name, take):
        """Asynchronous invocations of `function_name` go to `take(payload bytes)` (answered
        202, as Lambda accepts them) instead of the sandbox's Lambda."""
        self.handler.async_takers[function_name] = take

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # An answer goes out as two writes (headers, then body): with Nagle's algorithm the body waits
    # for the client's delayed ACK of the headers, some 40 ms on every call of a kept-alive
    # connection.
    disable_nagle_algorithm = True
    moto_port = None
    lambda_port = None
    faults = None
    lost = None
    requests = None
    async_takers = None
    authorizer = None

    def log_message(self, fmt, *args):
        pass

    def forward(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        try:
            denial = self.authorizer and self.authorizer.check(self.command, self.path, self.headers, body)
        except Exception as e:  # the harness's own failure: said, never passed as allowed
            denial = 500, [("Content-Type", "text/plain")], f"sandbox IAM failed: {e!r}".encode()
        if denial:
            return self.answer(*denial)
        match = INVOKE.match(unquote(self.path))
        asynchronous = bool(match) and self.headers.get("X-Amz-Invocation-Type") == "Event"
        fault = not asynchronous and self.matching(self.faults, body)
        if fault:
            # Read after the predicate ran: it may choose the answer (a fake function).
            return self.answer(*fault[2])
        self.requests.append((self.headers.get("User-Agent", ""), *api_call(self.command, self.path, self.headers, body)))
        if asynchronous:
            take = self.async_takers.get(function_name(match.group(1)))
            if take is not None:
                take(body or b"")
                return self.answer(202, [("x-amzn-RequestId", str(uuid.uuid4()))], b"")
        if match:
            # A function may run for minutes (Route 53 INSYNC waits): the sandbox's Lambda ends
            # it at its timeout.
            port, timeout = self.lambda_port, 900
        else:
            port, timeout = self.moto_port, 120
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        try:
            connection.request(self.command, self.path, body=body, headers=headers)
            response = connection.getresponse()
            payload = response.read()
            status, reply_headers = response.status, response.getheaders()
        except OSError as e:
            status, reply_headers, payload = 502, [("Content-Type", "text/plain")], f"front door: {e}".encode()
        finally:
            connection.close()
        lost = not asynchronous and self.matching(self.lost, body)
        if lost:
            return self.answer(*lost[2])
        self.answer(status, [(k, v) for k, v in reply_headers
                             if k.lower() not in HOP_BY_HOP and k.lower() != "content-length"], payload)

    def matching(self, entries, body):
        """The first entry with times left whose predicate matches this request, used once."""
        for entry in entries:
            predicate, times = entry[0], entry[1]
            if times > 0 and predicate(self.command, unquote(self.path), body or b""):
                entry[1] -= 1
                return entry
        return None

    def answer(self, status, headers, payload):
        # Every AWS answer carries a request id; the front door's own (a refusal, a fault, a 502
        # when the upstream failed) too: moto's engine indexes it on a Lambda error.
        if not any(k.lower() == "x-amzn-requestid" for k, _ in headers):
            headers = [*headers, ("x-amzn-RequestId", str(uuid.uuid4()))]
        # Nothing if the caller stopped waiting (its timeout: a slow hook's, say).
        reply(self, status, payload, headers)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = forward

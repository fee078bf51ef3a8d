"""The wire of a REST-JSON AWS API the harness models itself beside moto (VPC Lattice, CloudWatch
Synthetics: vpc_lattice.py, synthetics.py). A request signed for the API's signing name is the
module's; its operation is found by method and `requestUri` in botocore's model of the API, its
members (URI, query string, body) checked against the model's constraints (required members,
lengths, enums, ranges, list sizes: global_accelerator.violations) and string patterns, and
answered in JSON, an error as the services answer one (`x-amzn-ErrorType`, a JSON body with its
`message`). The account comes from the signing key (moto's mapping of access keys to accounts),
the Region from the credential scope. Each API keeps its own state per account and Region, and
its harness control (not AWS's API) at `POST /_harness/<control>/<account>/<region>`.

Not modelled here: signatures (moto checks none either), idempotency tokens, throttling, pages
beyond what an operation of the module gives itself.
"""
import json
import re
import threading
import uuid
from urllib.parse import parse_qs, unquote

import botocore.session

from global_accelerator import violations

_SCOPE = re.compile(r"Credential=([^/]+)/\d{8}/([^/]+)/([^/]+)/aws4_request")


class ServiceError(Exception):
    """An error as the service answers it: its code (`x-amzn-ErrorType`), HTTP status, message,
    and the other members of its error shape."""

    def __init__(self, code, status, message, **extra):
        super().__init__(message)
        self.code, self.status, self.message, self.extra = code, status, message, extra


def _patterns(shape, value, path, found):
    """Each string member of `shape` whose model pattern `value` breaks, as `violations` finds
    the other constraints (the shared validator leaves patterns out)."""
    if shape.type_name == "structure" and isinstance(value, dict):
        for name, member in shape.members.items():
            if value.get(name) is not None:
                _patterns(member, value[name], f"{path}.{name}" if path else name, found)
    elif shape.type_name == "list" and isinstance(value, list):
        for i, item in enumerate(value, 1):
            _patterns(shape.member, item, f"{path}.{i}.member", found)
    elif shape.type_name == "string" and isinstance(value, str) and "pattern" in shape.metadata:
        if not re.fullmatch(shape.metadata["pattern"], value):
            found.append((path, value, f"Member must satisfy regular expression pattern: {shape.metadata['pattern']}"))


class RestJsonApi:
    """One API: `operations` maps an operation's name to `f(state, request)` → (HTTP status,
    answer), or ServiceError; `region_state(account, region)` makes the API's state of an account
    and Region (kept here, one each), `harness(state, body)` answers its control, and
    `invalid(message, [(member, constraint)], reason)` makes the API's ValidationException
    (`reason` as VPC Lattice words it: `fieldValidationFailed`, `unknownOperation`,
    `cannotParse`). Operations and the control run under the API's lock, one at a time."""

    def __init__(self, signing_name, control, operations, region_state, harness, invalid):
        self.signing_name = signing_name
        self.model = botocore.session.get_session().get_service_model(signing_name)
        self.control = re.compile(rf"/_harness/{re.escape(control)}/(\d{{12}})/([a-z0-9-]+)")
        self.operations, self.region_state = operations, region_state
        self.harness, self.invalid = harness, invalid
        self.routes = [(operation, *self._route(operation)) for operation in operations]
        self.regions = {}  # (account, region) -> the API's state there
        self.lock = threading.RLock()

    def _state(self, account, region):
        """The API's state in `account` and `region` (called under the lock)."""
        if (account, region) not in self.regions:
            self.regions[(account, region)] = self.region_state(account, region)
        return self.regions[(account, region)]

    def _route(self, operation):
        """The operation's method and a regex of its requestUri, a group per URI member."""
        http = self.model.operation_model(operation).http
        uri = http["requestUri"].split("?", 1)[0]
        pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(uri))
        return http["method"], re.compile(pattern)

    def validate(self, operation, request):
        found = []
        shape = self.model.operation_model(operation).input_shape
        violations(shape, request, "", found)
        _patterns(shape, request, "", found)
        if found:
            said = "; ".join(f"Value '{v}' at '{p}' failed to satisfy constraint: {c}" if v is not None
                             else f"Value null at '{p}' failed to satisfy constraint: {c}" for p, v, c in found)
            raise self.invalid(f"{len(found)} validation error{'s' if len(found) > 1 else ''} detected: {said}",
                               [(p, c) for p, _, c in found], "fieldValidationFailed")

    def handle(self, account, region, method, path, query, body):
        """One request: (status, answer). `path` is the raw path (an ARN in it percent-encoded)."""
        for operation, route_method, pattern in self.routes:
            match = pattern.fullmatch(path)
            if method != route_method or not match:
                continue
            request, in_uri = dict(body), match.groupdict()
            # A member in the URI or the query string goes by its wire name there (`{name}`
            # for Synthetics' `Name`).
            for name, member in self.model.operation_model(operation).input_shape.members.items():
                location, wire = member.serialization.get("location"), member.serialization.get("name", name)
                if location == "uri" and wire in in_uri:
                    request[name] = unquote(in_uri[wire])
                elif location == "querystring" and wire in query:
                    value = query[wire][0]
                    request[name] = int(value) if member.type_name == "integer" and value.isdigit() else value
            self.validate(operation, request)
            with self.lock:
                return self.operations[operation](self._state(account, region), request)
        raise self.invalid(f"{method} {path} is not an operation this harness models", [], "unknownOperation")

    def serves(self, environ):
        if self.control.fullmatch(environ.get("PATH_INFO", "")):
            return True
        scope = _SCOPE.search(environ.get("HTTP_AUTHORIZATION", ""))
        return bool(scope) and scope.group(3) == self.signing_name

    def serve(self, environ, start_response):
        """One request of the API, or of the harness's control of it."""
        from moto.iam.models import get_account_id_from

        length = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(length) or b"{}"
        path = (environ.get("RAW_URI") or environ.get("REQUEST_URI") or environ.get("PATH_INFO", "")).split("?", 1)[0]
        status, code = 200, None
        try:
            try:
                body = json.loads(raw)
            except ValueError:
                raise self.invalid("the request's body is not JSON", [], "cannotParse") from None
            control = self.control.fullmatch(environ.get("PATH_INFO", ""))
            if control:
                with self.lock:
                    answer = self.harness(self._state(control.group(1), control.group(2)), body)
            else:
                scope = _SCOPE.search(environ["HTTP_AUTHORIZATION"])
                status, answer = self.handle(get_account_id_from(scope.group(1)), scope.group(2),
                                             environ["REQUEST_METHOD"], path,
                                             parse_qs(environ.get("QUERY_STRING", "")), body)
        except ServiceError as e:
            status, code, answer = e.status, e.code, {"message": e.message, **e.extra}
        text = json.dumps(answer).encode()
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(text))),
                   ("x-amzn-RequestId", str(uuid.uuid4()))]
        if code:
            headers.append(("x-amzn-ErrorType", code))
        start_response(f"{status} {'OK' if status < 300 else 'Error'}", headers)
        return [text]

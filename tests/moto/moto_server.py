"""moto_server, plus the things moto 5.2.5 lacks or gets wrong that the tests need.
Everything else is stock moto.

1. PutCompositeAlarm. moto models a composite alarm as an alarm with an `AlarmRule`
   (DescribeAlarms returns it under CompositeAlarms, SetAlarmState drives it) but has no
   PutCompositeAlarm action (HTTP 500 NotImplementedError). Added on moto's own backend, so
   the real SDK call works over the wire. And DescribeAlarmHistory's state updates (moto keeps
   no history): each state change by SetAlarmState, by name, type and time window, newest
   first. Not modelled: configuration updates and actions in the history, its 30-day window.
2. The naming rules of Step Functions' AWS SDK integrations
   (`arn:aws:states:::aws-sdk:<service>:<action>`). AWS documents that their parameters are
   written in PascalCase whatever the service's own casing (EKS DescribeCluster takes `Name`)
   and that results come back in PascalCase (`Cluster.Status`). moto's engine passes the
   parameters to boto3 verbatim and returns boto3's casing (its normalisation hooks are empty
   stubs), so a definition written for AWS fails in moto. This fills the two hooks from the
   botocore service model.
3. `States.ALL` as AWS defines it: a wildcard for every error *except* the terminal
   `States.DataLimitExceeded` and `States.Runtime`, which no Retry or Catch handles (the
   execution ends FAILED). moto's engine lets `States.ALL` match them, which would hide the
   very failures the safety net exists for. And a Parallel fails with its branch's error as
   it is: moto raised every branch error as a custom name, and refuses a custom `States.*`
   name, so a branch's `States.DataLimitExceeded` became `States.Runtime`. And StopExecution
   aborts a Parallel's branches, as AWS does: moto waited for them to end, and a branch waiting
   on a task token without a timeout never did, so the stopped execution stayed RUNNING.
4. EKS clusters as EKS makes them: each with its own endpoint
   (`https://<32 hex>.gr7.<region>.eks.amazonaws.com`) and a real PEM CA certificate,
   base64-encoded, as `certificateAuthority.data`. moto gives every cluster of a region the
   same endpoint and random text as CA data, so a second cluster looked like a duplicate
   Argo CD server and CA handling could not be tested.
5. SendTaskFailure's `cause`. moto's HTTP layer passes only the error to its engine, so a
   rejected approval lost its reason. The engine itself takes both. And its limits, which moto
   does not check: an `error` over 256 or a `cause` over 32,768 characters is a
   ValidationException, as AWS answers. A token whose task no longer waits (or that never
   was one) is AWS's 400 `TaskDoesNotExist`/`TaskTimedOut`/`InvalidToken`, not moto's 500:
   moto took a failure for a token already answered, or whose execution had ended, as
   delivered (AWS answers `TaskDoesNotExist`), and its own refusals failed to be made (their
   classes want a message), a 500. So is a token of a branch its Parallel ended (another
   branch failed, or the execution stopped): moto left that task waiting and recorded a late
   failure as the task's (patch 14's `_retire_branch_tokens`).
6. EKS access entries (CreateAccessEntry, DescribeAccessEntry, DeleteAccessEntry,
   AssociateAccessPolicy, ListAssociatedAccessPolicies), which moto lacks: kept per cluster,
   with EKS's answers: ResourceInUseException for an entry that exists,
   ResourceNotFoundException for a missing cluster or entry, InvalidParameterException for a
   principal that is not an IAM role or user ARN or a policy that is not an EKS access policy.
   Not modelled: access entry types other than STANDARD, Kubernetes groups' effect, namespace
   scopes beyond being stored, UpdateAccessEntry, the entries EKS creates by itself.

7. CloudWatch's Smithy RPC v2 CBOR protocol, the only one aws-sdk-cloudwatch speaks since 1.100
   (`POST /service/GraniteServiceVersion20100801/operation/<Operation>`, `smithy-protocol:
   rpc-v2-cbor`, CBOR bodies). moto already parses and serialises every protocol from
   botocore's service model; this adds the CBOR pair beside its JSON one (cbor2 for the
   encoding, timestamps as CBOR tag 1, blobs as byte strings, errors with `__type` and the
   `x-amzn-query-error` header of CloudWatch's awsQueryCompatible trait) and routes the
   operation path, so every CloudWatch action moto has answers CBOR as it answers JSON and query.
   Request compression (`Content-Encoding: gzip`, which the SDKs use for PutMetricData bodies
   over 10 KiB) moto's request layer undoes already. Not modelled: RPC v2's event streams
   (CloudWatch has none).

8. EventBridge's delivery as AWS does it: an event carries its `account` (moto's default
   target input leaves it out; the sandbox's alarm events are matched to rollouts by it), a
   DISABLED rule delivers nothing (moto's rules deliver whatever their state), and a Lambda
   function target is invoked asynchronously (`X-Amz-Invocation-Type: Event`) at
   `localhost:$MOTO_PORT`, where the sandbox's Lambda answers, with the target's InputTransformer
   applied as EventBridge applies it: a placeholder outside quotes becomes the JSON value at its
   path, one inside quotes its text (moto raised NotImplementedError for Lambda targets, and
   its transformer inserted strings unquoted, which is not JSON). An SNS topic target is
   published to, the event (or its transformed input) as the message (moto raised
   NotImplementedError, so a rule sending cluster-canary's events to people's topic, as
   infra/example-environment.yaml's does, failed every PutEvents that matched it with a 500).
   A schedule rule (a `ScheduleExpression`, no pattern) matches no event (moto's empty pattern
   matched every event, so the safety net's sweep schedule received every event put on the
   bus). moto does not fire schedules: the sandbox does (sandbox/safety_net.py).

9. A state machine CloudFormation creates, as `sam deploy` leaves it: SAM turns `DefinitionUri` into
   `DefinitionS3Location` and `DefinitionSubstitutions`; moto read only `DefinitionString`, so the
   state machine arrived with an empty definition, and it created it in the backend without the
   execution engine even with the engine on. Here the definition comes from moto's own S3 (or
   `Definition`/`DefinitionString`), `${name}` substitutions are made as CloudFormation makes them,
   and the state machine lands where StartExecution looks.

10. `AWS::NoValue` as CloudFormation resolves it: an `Fn::If` (or `Ref`) that comes to
   `AWS::NoValue` removes the list item or property it stands for; moto left a null in its
   place (a policy's conditional statement became `null`, which IAM refuses).
    An IAM role's inline policies as CloudFormation writes them: moto stored a template's
   `PolicyDocument` object as Python's text of it (single quotes), so GetRolePolicy answered
   something that is not JSON, and it skipped the validation PutRolePolicy does. Here each is
   stored as JSON and validated as IAM validates it (a malformed policy fails the stack), except
   that a policy without `Version` is accepted as IAM accepts it (moto's validator refuses it;
   SAM's generated policies have none).

11. The state machine's calls made as its role: moto's engine signs every service call with the
   fixed key `ak`, whoever the state machine is. Here each call is signed with the credentials
   of the state machine's role (or of a task's `Credentials.RoleArn`), assumed in moto's STS as
   Step Functions assumes it, so the sandbox's IAM (sandbox/iam.py, in its front door) checks
   the engine's `lambda:InvokeFunction` and `events:PutEvents` against the role's policies as
   AWS does.

12. The CloudFormation resource types the stack and the example environment use that moto's
   CloudFormation lacks (it skipped them with a warning, so a deployed stack silently missed its
   alarms, its queue policy, the trail EKS events need), each made by the API call AWS's own
   resource handler makes, on moto's own endpoint in the stack's account:
   `AWS::CloudWatch::Alarm` (PutMetricAlarm), `AWS::SQS::QueuePolicy` and `AWS::SNS::TopicPolicy`
   (the queue's/topic's `Policy` attribute), `AWS::SNS::Subscription` (Subscribe),
   `AWS::S3::BucketPolicy` (PutBucketPolicy), `AWS::CloudTrail::Trail` (CreateTrail,
   PutEventSelectors, StartLogging), `AWS::Events::EventBusPolicy` (PutPermission),
   `AWS::EKS::AccessEntry` (CreateAccessEntry and AssociateAccessPolicy, on patch 6's access
   entries), `AWS::Logs::MetricFilter` (PutMetricFilter), `AWS::Lambda::EventInvokeConfig`
   (PutFunctionEventInvokeConfig: the sandbox's Lambda reads a function's retries and on-failure
   destination from it). And a listener's `forward` default
   action with a `ForwardConfig` (weighted target groups): moto's CloudFormation required a
   single `TargetGroupArn` and failed with a 500; and a target group's `Fn::GetAtt` attributes
   (`TargetGroupFullName`, an alarm's dimension: a 500 too) and a load balancer's
   `LoadBalancerFullName`. Not modelled: updates and deletes of these
   types (the sandbox creates stacks only).

13. Execution status change events: AWS's Step Functions puts `Step Functions Execution Status
   Change` (source `aws.states`, detail `executionArn`, `stateMachineArn`, `name`, `status`,
   `startDate`/`stopDate` in epoch milliseconds, `input`/`output` as JSON text with their
   `inputDetails`/`outputDetails`, `error`, `cause`) on the account's default bus whenever an
   execution's status changes. moto's engine emitted none, so the stack's SafetyNet rule never
   fired. Here every execution's end puts it, so the rule delivers it as on AWS. Not modelled:
   the RUNNING event at the start, and redrive's PENDING_REDRIVE.

14. Starting a child execution (`arn:aws:states:::states:startExecution.sync:2`, the fleet's
   cells): like the AWS SDK integrations (2.), its parameters are PascalCase (`StateMachineArn`,
   `Name`, `Input`) and its results PascalCase (`ExecutionArn`, then DescribeExecution's
   `Status`, `Output`, ...), dates in epoch milliseconds, as AWS documents for the optimized
   Step Functions integration.
   moto's engine passed the parameters to boto3 as written, whose serializer failed on
   `StateMachineArn` (a KeyError, which the engine reports as `States.Runtime`), and read
   `ExecutionArn` from a result it left in boto3's casing. The same hooks as 2. are filled here,
   and a response is named by the operation it answers (the wait reads DescribeExecution's).
   And a Map iteration fails the Map with its own error as it is, as a Parallel's branch does
   (3.): moto made every iteration error a custom name, so a `States.*` error became
   `States.Runtime`; and an execution stopped while a Map runs ends ABORTED (moto failed it
   with an AttributeError of its own, FAILED). Not modelled: stopping the child when the parent's task is cancelled (the
   fleet's own safety net does it, docs/fleets.md).

15. StopExecution's `error` and `cause` on the stopped execution, as AWS keeps them:
   DescribeExecution (and the status change event) of an ABORTED execution carries what the
   caller gave (and leaves out what it did not). moto kept them only in the history, so the
   fleet could not tell a cell it stopped itself (`FleetHalted`) from one a person stopped.
   And a stopped execution is ABORTED, with its stopDate and its status change event (13.), at
   the StopExecution, as on AWS: moto's engine said so only once the execution's worker got
   back from the task it was in (a Lambda function's whole run), which delayed the safety net
   by that task (107 s seen). Not modelled: the history's ExecutionAborted event still comes
   when the worker gets back.

16. Step Functions' 256 KiB payload limit as AWS counts it: the UTF-8 bytes of the data as
   compact JSON, at most 262,144 (moto counted Python's default `", "` and `": "` separators and
   `\\uXXXX` escapes, and refused 262,144 itself, so the sandbox refused inputs AWS carries), on
   every state's output and task result as moto checked, and on a task's input when it is
   scheduled (its Parameters; a Lambda function's payload), which moto did not check and AWS
   does ("input data when scheduling a task"). Not modelled: StartExecution's own limit on the
   input.

17. Percentile statistics (`p99`, `p99.9`) in GetMetricData, as CloudWatch gives them of the raw
   values put in each period (nearest rank), and the trimmed count and percentile rank with
   absolute bounds as CloudWatch's "Statistics definitions" give them: `TC(X:Y)` the number of
   values with X < value ≤ Y, `PR(X:Y)` their percentage, either bound left out for none
   (`TC(0.5:)`: the values above 0.5). moto answers only SampleCount, Average, Sum, Minimum and
   Maximum and gave the others' every value as null. Not modelled: percentiles of statistic
   sets (PutMetricData's StatisticValues), bounds in percent (`TC(10%:90%)`), the other extended
   statistics (tm99, wm99, TS, IQM), and CloudWatch's own approximation over many values.

18. AWS Systems Manager Change Calendars: CreateDocument of a `ChangeCalendar` document in
   `TEXT` format (an iCalendar file; moto knew JSON and YAML only and refused it), parsed with
   the `icalendar` library (content that is not iCalendar is InvalidDocumentContent, as SSM
   answers), and GetCalendarState, which moto lacks, as SSM evaluates it: a calendar of type
   `DEFAULT_OPEN` (its `X-CALENDAR-TYPE`) is CLOSED during one of its events and OPEN otherwise,
   `DEFAULT_CLOSED` the other way round; several calendars are CLOSED when any is; `AtTime`
   (ISO 8601) or now; `NextTransitionTime` the next start or end of an event after it. A name or
   ARN of no document is InvalidDocument, of a document of another type InvalidDocumentType.
   Not modelled: recurring events (RRULE), all-day events' time zones other than UTC, shared
   calendars of other accounts, document versions.

19. The errors of a task whose Resource is the function's ARN (the rollout's `Admit`, the
   fleet's `Plan`) named as Step Functions names them, as the Lambda integration's are: Lambda's
   own error answers `Lambda.<code>` (`Lambda.ServiceException` for a 500,
   `Lambda.TooManyRequestsException` for a throttle), and an invocation that got no answer
   `Lambda.SdkClientException`. moto named both `Exception` (or `States.TaskFailed`), which no
   Retry names, so one transient Lambda error at a cell's first state ended the cell. An error
   answer without a request id or an error code (a proxy's 502) is named too: moto's wording of
   it raised KeyError('RequestId'), and a fleet Map's iteration was lost (its cell never started).

20. EKS cluster insights and add-ons, which moto lacks, from EKS's API reference: ListInsights
   (`filter` by categories, Kubernetes versions and statuses; `maxResults` 1-100, default 100, and
   `nextToken`), DescribeInsight (recommendation, additionalInfo, resources), CreateAddon
   (CREATING, ACTIVE from the first read a second later; ResourceInUseException for one the
   cluster has), ListAddons (`maxResults` 1-100, `nextToken`), DescribeAddon (status, `health`
   with its `issues`), DeleteAddon; a cluster that does not exist is ResourceNotFoundException,
   an insight or add-on it lacks too, in EKS's words. EKS computes insights and add-on health
   itself; here the harness sets them (not AWS's API: `POST
   /_harness/eks/<account>/<region>/clusters/<name>/insights` with an insight as
   DescribeInsight answers it, and `.../addons/<addon>/health` with `status` and `issues`, on
   moto's own endpoint). Not modelled: add-on versions (DescribeAddonVersions), configuration
   values and their schema, Pod Identity associations, UpdateAddon, insight refresh
   (StartInsightsRefresh), and the insights EKS would compute from a cluster's API traffic.

21. AWS Global Accelerator, which moto lacks: a service of its own, written from AWS's API
   reference and botocore's model of it, in tests/moto/global_accelerator.py (its header says
   what it models and what not), served on moto's endpoint for the requests whose
   `X-Amz-Target` is Global Accelerator's, with its harness control at
   `POST /_harness/globalaccelerator/<account>`.

22. Elastic Load Balancing's forward actions and Network Load Balancers as AWS checks them, in
   tests/moto/elbv2_forwards.py: load balancer ARNs that name their type (`net/`, `gwy/`), target
   group weights 0-999, the target groups of a forward action existing and of protocols its load
   balancer forwards to (one protocol on an NLB), no target group stickiness and no listener
   rules on an NLB; a rule's conditions counted and checked as ELB does (one of each single
   kind, five values a rule, header names RFC 7230 tokens).

23. A timed-out execution's `stopDate`, as AWS gives it for every ended execution: moto's
   DescribeExecution and ListExecutions gave it for SUCCEEDED, FAILED and ABORTED only, so a
   TIMED_OUT execution looked as if it had no end (the safety net's sweep skipped it, and a
   test waiting for its safety net after its end did not wait).

24. CloudWatch Application Signals' SLOs and their budget reports, which moto lacks: written from
   AWS's API reference and botocore's model of it, in tests/moto/application_signals.py (its
   header says what it models and what not), served on moto's endpoint for the requests signed
   for `application-signals`; a budget report is computed from the SLO's metrics in moto's
   CloudWatch at the request's Timestamp.

25. Amazon VPC Lattice's services, listeners, rules and target groups, which moto has in part (no
   GetRule, UpdateRule or UpdateListener, identifiers that are not Lattice's): written from AWS's
   API reference and botocore's model of it, in tests/moto/vpc_lattice.py (its header says what it
   models and what not), served on moto's endpoint for the requests signed for `vpc-lattice`, with
   its harness control at `POST /_harness/vpclattice/<account>/<region>`.

26. GetExecutionHistory answered at the cost of its JSON, in pages as AWS gives them: moto's
   generic response serializer took about 0.13 s of CPU for a rollout's history of a few hundred
   events, and the tests, the sandbox and the CLI read histories every second or two (in
   `test_gates.py`, 978 reads and 131 s of CPU). The same document, written directly: members
   without a value left out, timestamps as epoch seconds to the millisecond (checked against
   moto's serializer over a run of the gates, fleets and never-stranded tests: the same JSON),
   each event converted once (a history only grows). And paged as Step Functions pages it (stock
   moto gave every history in one page): `maxResults` 100 when absent or 0, at most 1000 (a
   ValidationException past it), `reverseOrder` newest first, a `nextToken` while events remain,
   refused as `InvalidToken` when it is not this request's. Not modelled: `includeExecutionData`
   (inputs and outputs are always given), tokens expiring after 24 hours.
27. A definition parsed once per server: moto's engine parsed the whole definition again for every
   execution (about a second of CPU for the rollout's); its syntax tree is now kept per
   definition text, and each execution still gets evaluation components of its own. With
   `--fork-servers`, once per forking process: a server leaves each definition it parsed in its
   parent's folder (`$TMPDIR/moto-definitions-<pid>`), and the parent parses it before its next
   fork (at most eight), so the next servers are born with the tree (every sandbox deploys the
   same two definitions). The parent also loads, once, the botocore models of the clients the
   servers make on themselves (patches 11 and 12).
28. moto's services listed once: its dispatcher listed its package's folders on every request
   (some 200 `isdir` calls, about a tenth of a busy server's CPU).
29. GetMetricData in one pass over its window: moto scanned every data point of the window once
   per period of each query (a rollout's checks read minutes of per-second points: 35 ms of CPU a
   call). Each query's points are now filtered once and put in their periods by arithmetic; the
   answers are moto's own (its filters, statistics and metric math), checked against its stock
   computation on generated data (tests/e2e/test_moto_harness.py). Metrics Insights queries
   (`SELECT`) and refused windows still go to moto's own.
30. CloudWatch Synthetics' canaries, started, stopped and run as a test says (moto has no runs,
   StartCanary or StopCanary), from the API reference and botocore's model, in
   tests/moto/synthetics.py (its header says what it models), on the REST-JSON wire VPC Lattice's
   model shares (tests/moto/rest_json.py); its harness control sets a canary's next runs at
   `POST /_harness/synthetics/<account>/<region>`.

Still not modelled: the 256 KiB limit on Pass and Choice state output (moto checks task
results only).

Usage: exactly as moto_server, e.g. python moto_server.py -H 127.0.0.1 -p 5000. With `-p 0` it
binds a port of the kernel's choosing and prints `{"endpoint": "http://<host>:<port>"}` as its
first line on stdout: a caller that picks a free port and hands it over races every other process
for it (moto then fails to bind, and a check that the port answers finds the other process).
With `--fork-servers` it serves nothing itself: for each line `{"env": {...}, "log": PATH}` on
stdin it forks a server as `-p 0` starts one, with that line's variables as its environment and
its output in PATH, and answers `{"pid": PID, "endpoint": ...}` (sandbox/moto_forks.py). Importing
moto and these patches takes about two seconds of CPU; a fork takes milliseconds, and each server
is still a process of its own that has served nothing before its caller.
"""
import argparse
import atexit
import base64
import copy
import datetime
import functools
import glob
import hashlib
import importlib
import json
import math
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
import uuid
from urllib.parse import unquote

import boto3
import botocore.session
import cbor2
from botocore import xform_name
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from moto import backends as moto_backends
from moto.cloudwatch import urls as cloudwatch_urls
from moto.cloudwatch import models as cloudwatch_models
from moto.cloudwatch.responses import CloudWatchResponse
from moto.core import parse as moto_parse
from moto.core import serialize as moto_serialize
from moto.core.responses import ActionResult, EmptyResult
from moto.eks import exceptions as eks_exceptions
from moto.eks import models as eks_models
from moto.eks import urls as eks_urls
from moto.eks.responses import EKSResponse
from moto.server import DomainDispatcherApplication, MotoRequestHandler, create_backend_app, main
from moto.core.exceptions import AWSError
from moto.events import models as events_models
from moto.events.utils import EventTemplateParser
from moto.cloudformation import parsing as cfn_parsing
from moto.core.common_models import CloudFormationModel
from moto.elbv2 import models as elbv2_models
from moto.iam import models as iam_models
from moto.iam.policy_validation import IAMPolicyDocumentValidator
from moto.s3.models import s3_backends
from moto.sns.models import sns_backends
from moto.stepfunctions import exceptions as sfn_exceptions
from moto.stepfunctions import models as sfn_models
from moto.stepfunctions import responses as sfn_responses
from moto.stepfunctions.parser import api as sfn_api
from moto.stepfunctions.parser.backend import execution as sfn_execution
from moto.stepfunctions.parser import models as sfn_parser_models
from moto.stepfunctions.responses import StepFunctionResponse
from moto.stepfunctions.parser.asl.utils import boto_client as sfn_boto_client
from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser
from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor
from moto.sts.models import sts_backends
from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import CustomErrorName
from moto.stepfunctions.parser.asl.component.common.error_name.error_equals_decl import ErrorEqualsDecl
from moto.stepfunctions.parser.asl.component.state.exec.state_parallel import branches_decl as parallel_branches
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration import iteration_worker as map_iteration
from moto.stepfunctions.parser.asl.eval import environment as sfn_environment
from moto.stepfunctions.parser.asl.eval.callback.callback import CallbackConsumerLeft, CallbackConsumerTimeout
from moto.stepfunctions.parser.asl.component.state import state as sfn_state
from moto.stepfunctions.parser.asl.component.state.exec.state_task import state_task_lambda as sfn_state_task_lambda
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service as sfn_state_task_service,
)
from moto.stepfunctions.parser.asl.utils import encoding as sfn_encoding
from moto.stepfunctions.parser.asl.eval.program_state import ProgramStopped
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_sfn import (
    StateTaskServiceSfn,
)
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
    StatesErrorNameType,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_aws_sdk import (
    StateTaskServiceAwsSdk,
)

import elbv2_forwards  # beside this file (patch 22)
import global_accelerator  # beside this file (patch 21)
import application_signals  # beside this file (patch 24)
import vpc_lattice  # beside this file (patch 25)
import synthetics  # beside this file (patch 30)


def put_composite_alarm(self):
    self.cloudwatch_backend.put_metric_alarm(
        name=self._get_param("AlarmName"),
        namespace=None,
        metric_name=None,
        comparison_operator=None,
        evaluation_periods=None,
        period=None,
        threshold=None,
        statistic=None,
        description=self._get_param("AlarmDescription"),
        dimensions=[],
        alarm_actions=self._get_param("AlarmActions", []),
        ok_actions=self._get_param("OKActions", []),
        insufficient_data_actions=self._get_param("InsufficientDataActions", []),
        actions_enabled=self._get_bool_param("ActionsEnabled"),
        rule=self._get_param("AlarmRule"),
        tags=self._get_param("Tags", []),
    )
    return EmptyResult()


CloudWatchResponse.put_composite_alarm = put_composite_alarm

# And DescribeAlarmHistory's state changes, which moto does not keep: each SetAlarmState (and
# a new alarm's first state) is an item of AWS's shape (`HistoryItemType: StateUpdate`, the
# summary, `HistoryData` with the old and new state), newest first.
_ALARM_HISTORY = {}  # (account, region) -> [item]
_stock_set_alarm_state = cloudwatch_models.CloudWatchBackend.set_alarm_state


def _set_alarm_state_kept(self, alarm_name, reason, reason_data, state_value):
    old = self.alarms[alarm_name].state_value if alarm_name in self.alarms else None
    _stock_set_alarm_state(self, alarm_name, reason, reason_data, state_value)
    alarm = self.alarms[alarm_name]
    if old != state_value:
        _ALARM_HISTORY.setdefault((self.account_id, self.region_name), []).insert(0, {
            "AlarmName": alarm_name,
            "AlarmType": "CompositeAlarm" if getattr(alarm, "rule", None) else "MetricAlarm",
            "Timestamp": datetime.datetime.now(datetime.timezone.utc),
            "HistoryItemType": "StateUpdate",
            "HistorySummary": f"Alarm updated from {old} to {state_value}",
            "HistoryData": json.dumps({"version": "1.0", "oldState": {"stateValue": old},
                                       "newState": {"stateValue": state_value, "stateReason": reason}}),
        })


def describe_alarm_history(self):
    items = _ALARM_HISTORY.get((self.cloudwatch_backend.account_id, self.cloudwatch_backend.region_name), [])
    name, kind = self._get_param("AlarmName"), self._get_param("HistoryItemType")
    start, end = self._get_param("StartDate"), self._get_param("EndDate")

    def moment(value):
        """A parsed date (naive ones are UTC), or epoch seconds, as an aware UTC time."""
        if value is None:
            return None
        if isinstance(value, datetime.datetime):
            return value if value.tzinfo else value.replace(tzinfo=datetime.timezone.utc)
        try:
            return datetime.datetime.fromtimestamp(float(value), datetime.timezone.utc)
        except ValueError:
            return moment(datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00")))

    start, end = moment(start), moment(end)
    found = [i for i in items if (name is None or i["AlarmName"] == name)
             and (kind is None or i["HistoryItemType"] == kind)
             and (start is None or i["Timestamp"] >= start) and (end is None or i["Timestamp"] <= end)]
    return ActionResult({"AlarmHistoryItems": found})


cloudwatch_models.CloudWatchBackend.set_alarm_state = _set_alarm_state_kept


# 17. Percentile statistics.
_stock_statistics_for_type = cloudwatch_models.Statistics.get_statistics_for_type


_NUMBER = r"(\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)?"
_BOUNDED = re.compile(rf"(TC|PR)\({_NUMBER}:{_NUMBER}\)")


def _statistics_for_type(self, stat):
    values = sorted(self.metric_single_values_list)
    percentile = re.fullmatch(r"p(\d+(?:\.\d+)?)", stat)
    bounded = _BOUNDED.fullmatch(stat)
    if not values or not (percentile or bounded):
        return _stock_statistics_for_type(self, stat)
    if bounded:
        kind, low, high = bounded.groups()
        inside = [v for v in values
                  if (low is None or v > float(low)) and (high is None or v <= float(high))]
        return len(inside) if kind == "TC" else 100.0 * len(inside) / len(values)
    rank = math.ceil(float(percentile.group(1)) / 100 * len(values))
    return values[min(max(rank, 1), len(values)) - 1]


cloudwatch_models.Statistics.get_statistics_for_type = _statistics_for_type
CloudWatchResponse.describe_alarm_history = describe_alarm_history

_models = botocore.session.get_session()

RPC_V2_CBOR = "smithy-rpc-v2-cbor"
_RPC_V2_OPERATION = re.compile(r"/service/[A-Za-z0-9]+/operation/(?P<operation>[A-Za-z0-9]+)$")


class RpcV2CborParser(moto_parse.JSONParser):
    """A request body in CBOR, walked over the input shape exactly as moto walks JSON."""

    def _parse_body_as_json(self, body_contents):
        return cbor2.loads(body_contents) if body_contents else {}

    def _parse_timestamp(self, shape, value):
        # cbor2 decodes tag 1 to an aware datetime; moto keeps naive UTC.
        if isinstance(value, datetime.datetime):
            return value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return super()._parse_timestamp(shape, value)

    def _parse_blob(self, shape, value):
        return value


class RpcV2CborSerializer(moto_serialize.JSONSerializer):
    """moto's JSON serialiser with CBOR on the wire: the same members, names and errors."""

    def _get_protocol_specific_content_type(self):
        return "application/cbor"

    def _serialize_body(self, body):
        return cbor2.dumps(body)

    def _serialize_type_timestamp(self, serialized, value, shape, key):
        # Tag 1, epoch seconds cut to milliseconds as Smithy asks (and moto's JSON does).
        aware = moto_serialize.parse_to_aware_datetime(value)
        epoch = moto_serialize.TimestampSerializer._timestamp_unixtimestamp(aware)
        self._default_serialize(serialized, cbor2.CBORTag(1, epoch), shape, key)

    def _serialize_type_blob(self, serialized, value, shape, key):
        self._default_serialize(serialized, value if isinstance(value, bytes) else value.encode(), shape, key)

    def _serialized_result_to_response(self, resp, result, shape, serialized_result):
        resp = super()._serialized_result_to_response(resp, result, shape, serialized_result)
        resp["headers"]["smithy-protocol"] = "rpc-v2-cbor"
        return resp

    def _serialized_error_to_response(self, resp, error, shape, serialized_error):
        resp = super()._serialized_error_to_response(resp, error, shape, serialized_error)
        resp["headers"]["smithy-protocol"] = "rpc-v2-cbor"
        return resp


_stock_cloudwatch_action = CloudWatchResponse._get_action
_stock_cloudwatch_setup = CloudWatchResponse.setup_class


def _is_rpc_v2_cbor(headers):
    return headers.get("smithy-protocol") == "rpc-v2-cbor"


def _cloudwatch_setup(self, request, full_url, headers, use_raw_body=None):
    # A CBOR body is binary: moto would decode it as UTF-8 text for the query protocol.
    raw = True if _is_rpc_v2_cbor(request.headers) else use_raw_body
    return _stock_cloudwatch_setup(self, request, full_url, headers, use_raw_body=raw)


def _cloudwatch_action(self):
    # RPC v2 names the operation in the path, not in `Action=` or `X-Amz-Target`.
    operation = _RPC_V2_OPERATION.search(self.path)
    if operation and _is_rpc_v2_cbor(self.headers):
        return operation.group("operation")
    return _stock_cloudwatch_action(self)


moto_parse.PROTOCOL_PARSERS[RPC_V2_CBOR] = RpcV2CborParser
moto_serialize.SERIALIZERS[RPC_V2_CBOR] = RpcV2CborSerializer
CloudWatchResponse._get_action = _cloudwatch_action
CloudWatchResponse.setup_class = _cloudwatch_setup
cloudwatch_urls.url_paths[r"{0}/service/(?P<service>[A-Za-z0-9]+)/operation/(?P<operation>[A-Za-z0-9]+)$"] = (
    CloudWatchResponse.dispatch
)


def _operation(task, action=None):
    model = _models.get_service_model(task._get_boto_service_name())
    action = action or task._get_boto_service_action()
    name = next(op for op in model.operation_names if xform_name(op) == action)
    return model.operation_model(name)


def _to_api_names(value, shape):
    """PascalCase parameter names -> the service's member names, following the shape."""
    if shape is None:
        return value
    if shape.type_name == "structure" and isinstance(value, dict):
        members = {name.lower(): (name, member) for name, member in shape.members.items()}
        out = {}
        for key, item in value.items():
            name, member = members.get(key.lower(), (key, None))
            out[name] = _to_api_names(item, member)
        return out
    if shape.type_name == "list" and isinstance(value, list):
        return [_to_api_names(item, shape.member) for item in value]
    if shape.type_name == "map" and isinstance(value, dict):
        return {key: _to_api_names(item, shape.value) for key, item in value.items()}
    return value


def _to_pascal(value, shape):
    """A result's member names in PascalCase, as Step Functions returns them (map keys stay)."""
    if shape is None:
        return value
    if shape.type_name == "structure" and isinstance(value, dict):
        return {
            key[:1].upper() + key[1:]: _to_pascal(item, shape.members.get(key)) for key, item in value.items()
        }
    if shape.type_name == "list" and isinstance(value, list):
        return [_to_pascal(item, shape.member) for item in value]
    if shape.type_name == "map" and isinstance(value, dict):
        return {key: _to_pascal(item, shape.value) for key, item in value.items()}
    return value


def _normalise_parameters(self, parameters, boto_service_name=None, service_action_name=None):
    converted = _to_api_names(parameters, _operation(self).input_shape)
    parameters.clear()
    parameters.update(converted)


def _normalise_response(self, response, boto_service_name=None, service_action_name=None):
    if isinstance(response, dict):
        converted = _to_pascal(response, _operation(self).output_shape)
        response.clear()
        response.update(converted)


StateTaskServiceAwsSdk._normalise_parameters = _normalise_parameters
StateTaskServiceAwsSdk._normalise_response = _normalise_response

# --- 14. The optimized Step Functions integration's casing ---------------------------------
_stock_sfn_normalise_parameters = StateTaskServiceSfn._normalise_parameters


def _sfn_normalise_parameters(self, parameters, boto_service_name=None, service_action_name=None):
    # moto's own step first: an `Input` object becomes its JSON text.
    _stock_sfn_normalise_parameters(self, parameters, boto_service_name, service_action_name)
    converted = _to_api_names(parameters, _operation(self, service_action_name).input_shape)
    parameters.clear()
    parameters.update(converted)


def _sfn_normalise_response(self, response, boto_service_name=None, service_action_name=None):
    if isinstance(response, dict):
        converted = _to_pascal(response, _operation(self, service_action_name).output_shape)
        response.clear()
        # Dates as AWS writes them in the state: epoch milliseconds (boto3 gives datetimes,
        # which are not JSON).
        response.update({k: _epoch_ms(v) if isinstance(v, datetime.datetime) else v for k, v in converted.items()})


StateTaskServiceSfn._normalise_parameters = _sfn_normalise_parameters
StateTaskServiceSfn._normalise_response = _sfn_normalise_response

UNCATCHABLE = {StatesErrorNameType.StatesStatesDataLimitExceeded, StatesErrorNameType.StatesRuntime}
_stock_error_equals = ErrorEqualsDecl._eval_body


def _error_equals(self, env):
    error_name = env.stack[-1]
    terminal = isinstance(error_name, StatesErrorName) and error_name.typ in UNCATCHABLE
    if terminal and ErrorEqualsDecl._STATE_ALL_ERROR in self.error_names:
        env.stack.pop()
        env.stack.append(False)
        return
    _stock_error_equals(self, env)


ErrorEqualsDecl._eval_body = _error_equals


def _branch_error_name(error_name):
    """A Parallel branch's error as the Parallel raises it: a `States.*` error stays one (moto
    made every branch error a custom name, and a `States.*` custom name is itself an error,
    which turned a branch's terminal failure into `States.Runtime`)."""
    if error_name and error_name.startswith("States."):
        try:
            return StatesErrorName.from_name(error_name)
        except ValueError:
            pass
    return CustomErrorName(error_name=error_name)


parallel_branches.CustomErrorName = lambda error_name: _branch_error_name(error_name)
# --- 14. (with 3.) A Map iteration's error, as it is.
map_iteration.CustomErrorName = lambda error_name: _branch_error_name(error_name)
_stock_map_event_details = map_iteration.EventDetails


def _map_event_details(**details):
    """An iteration stopped with its execution (StopExecution) reported the stop's error text
    where the Map reads an ExecutionFailedEventDetails object, and the Map then failed the
    stopped execution with an AttributeError (`States.Runtime`, status FAILED): AWS ends it
    ABORTED."""
    failed = details.get("executionFailedEventDetails")
    if failed is None or isinstance(failed, str):
        details["executionFailedEventDetails"] = sfn_api.ExecutionFailedEventDetails(
            error=failed or "MapIterationAborted", cause="the execution was stopped")
    return _stock_map_event_details(**details)


map_iteration.EventDetails = _map_event_details
_stock_set_error = sfn_environment.Environment.set_error


def _set_error_unless_stopped(self, error):
    # A stopped execution stays ABORTED: a state still unwinding when the stop came (a Map's
    # iterations) does not make it FAILED afterwards.
    if isinstance(self.program_state(), ProgramStopped):
        return
    _stock_set_error(self, error)


sfn_environment.Environment.set_error = _set_error_unless_stopped


def _branches_eval_body(self, env):
    """BranchesDecl._eval_body as moto has it, except that the wait for the branches also ends
    when the execution stops (StopExecution): moto waited for every branch to end, and a branch
    waiting on a task token without a timeout never does, so a stopped execution stayed
    RUNNING. AWS aborts the branches with the execution."""
    input_val = env.stack.pop()
    tokens_before = set(env.callback_pool_manager._pool)
    pool = parallel_branches.BranchWorkerPool(workers_num=len(self.programs))
    workers = []
    for program in self.programs:
        frame = env.open_inner_frame()
        frame.states.reset(input_value=input_val)
        worker = parallel_branches.BranchWorker(branch_worker_comm=pool, program=program, env=frame)
        workers.append(worker)
        worker.start()
    while not pool._termination_event.wait(0.2):
        if not env.is_running():
            break
    exit_event_details = pool.get_exit_event_details()
    if exit_event_details is not None or not env.is_running():
        for worker in workers:
            worker.stop(stop_date=datetime.datetime.now(), cause=None, error=None)
            env.close_frame(worker.env)
        _retire_branch_tokens(env.callback_pool_manager, tokens_before)
    if exit_event_details is not None and env.is_running():
        raise parallel_branches.FailureEventException(failure_event=parallel_branches.FailureEvent(
            env=env,
            error_name=_branch_error_name(exit_event_details.get("error")),
            event_type=parallel_branches.HistoryEventType.ExecutionFailed,
            event_details=parallel_branches.EventDetails(executionFailedEventDetails=exit_event_details),
        ))
    if not env.is_running():
        env.stack.append([])  # stopped: the execution ends ABORTED, nothing reads this
        return
    results = []
    for worker in workers:
        results.append(worker.env.states.get_input())
        env.close_frame(worker.env)
    env.stack.append(results)


parallel_branches.BranchesDecl._eval_body = _branches_eval_body


def _retire_branch_tokens(callbacks, tokens_before):
    """The task tokens of branches a failed (or stopped) Parallel ended: no task waits on them
    any more, so an answer is AWS's `TaskDoesNotExist` (`_token_refusal`). moto left their
    tasks waiting, took a late SendTaskFailure as delivered and recorded a TaskFailed after the
    Parallel had failed (a rollback's watch then read it as its restore failing)."""
    for token, endpoint in list(callbacks._pool.items()):
        # A task answered or timed out keeps what it had.
        if token not in tokens_before and endpoint.get_outcome() is None and endpoint.consumer_error is None:
            endpoint.report(CallbackConsumerLeft())
            endpoint.interrupt_all()


def _cluster_ca(name):
    """A self-signed CA certificate for one cluster, base64 of its PEM, as EKS gives it."""
    key = ec.generate_private_key(ec.SECP256R1())
    # EKS's CA is named `kubernetes` whatever the cluster's name (a common name is at most 64
    # characters, a cluster name 100).
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubernetes")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return base64.b64encode(certificate.public_bytes(serialization.Encoding.PEM)).decode()


_stock_cluster_init = eks_models.Cluster.__init__


def _cluster_init(self, *args, **kwargs):
    _stock_cluster_init(self, *args, **kwargs)
    region = self.arn.split(":")[3]
    endpoint_id = hashlib.sha256(self.arn.encode()).hexdigest()[:32].upper()
    self.endpoint = f"https://{endpoint_id}.gr7.{region}.eks.amazonaws.com"
    self.certificate_authority = {"data": _cluster_ca(self.name)}


eks_models.Cluster.__init__ = _cluster_init


SEND_TASK_FAILURE_LIMITS = {"error": 256, "cause": 32768}


def error_and_cause(response):
    """A request's `error` and `cause` (SendTaskFailure, StopExecution), within AWS's limits."""
    params = {name: response._get_param(name) for name in SEND_TASK_FAILURE_LIMITS}
    for name, limit in SEND_TASK_FAILURE_LIMITS.items():
        if params[name] is not None and len(params[name]) > limit:
            raise sfn_exceptions.ValidationException(
                f"1 validation error detected: Value at '{name}' failed to satisfy constraint: "
                f"Member must have length less than or equal to {limit}")
    return params


def send_task_failure(self):
    params = error_and_cause(self)
    backend = self.stepfunction_backend
    if not isinstance(backend, sfn_parser_models.StepFunctionsParserBackend):
        # Without the engine no task runs, so no token is one AWS would know.
        raise AWSError("Invalid Token: the token belongs to no task", "InvalidToken", 400)
    token = self._get_param("taskToken")
    # Decided here: the engine's own exceptions for these cannot even be made (their classes
    # want a message it does not give), which moto's HTTP layer answered with a 500.
    refusal = _token_refusal(backend, token)
    if refusal:
        raise AWSError(*refusal, 400)
    backend.send_task_failure(token, **params)
    return EmptyResult()


def _token_refusal(backend, token):
    """AWS's (message, error) for a token no task waits on: none ever did, it was answered
    already or its execution has ended (moto keeps those in its callback pool and takes another
    answer), or its task timed out; None while its task waits."""
    for execution in backend._get_executions():
        worker = getattr(execution, "exec_worker", None)
        endpoint = worker.env.callback_pool_manager.get(token) if worker else None
        if endpoint is None:
            continue
        if isinstance(endpoint.consumer_error, CallbackConsumerTimeout):
            return "Task Timed Out: the task's timeout passed", "TaskTimedOut"
        if (execution.status != sfn_api.ExecutionStatus.RUNNING or endpoint.get_outcome() is not None
                or isinstance(endpoint.consumer_error, CallbackConsumerLeft)):
            return "Task Does Not Exist: it was answered already, or its execution has ended", "TaskDoesNotExist"
        return None
    return "Invalid Token: the token belongs to no task", "InvalidToken"


StepFunctionResponse.send_task_failure = send_task_failure


# --- 6. EKS access entries ---------------------------------------------------------------
ACCESS_POLICY_PREFIX = ":eks::aws:cluster-access-policy/"
PRINCIPAL = re.compile(r"arn:aws[a-z-]*:iam::\d{12}:(role|user)/.+")


def _not_found(message):
    return eks_exceptions.ResourceNotFoundException(
        clusterName=None, nodegroupName=None, fargateProfileName=None, addonName=None, message=message)


def _entries(self, cluster_name):
    cluster = self.eks_backend.describe_cluster(name=cluster_name)  # ResourceNotFoundException
    if not hasattr(cluster, "access_entries"):
        cluster.access_entries = {}
    return cluster, cluster.access_entries


def _entry(self, cluster_name, principal):
    cluster, entries = _entries(self, cluster_name)
    if principal not in entries:
        raise _not_found(f"The specified access entry resource is not found on cluster {cluster_name}.")
    return cluster, entries[principal]


def create_access_entry(self):
    name, principal = self._get_param("name"), self._get_param("principalArn")
    cluster, entries = _entries(self, name)
    if not principal or not PRINCIPAL.fullmatch(principal):
        raise eks_exceptions.InvalidParameterException(
            clusterName=name, nodegroupName=None, fargateProfileName=None, addonName=None,
            message=f"The principalArn parameter format is not valid: {principal}")
    if principal in entries:
        raise eks_exceptions.ResourceInUseException(
            clusterName=name, nodegroupName=None, fargateProfileName=None, addonName=None,
            message="The specified access entry resource is already in use on this cluster.")
    account = cluster.arn.split(":")[4]
    entry = {
        "clusterName": name,
        "principalArn": principal,
        "kubernetesGroups": self._get_param("kubernetesGroups") or [],
        "accessEntryArn": f"arn:aws:eks:{cluster.arn.split(':')[3]}:{account}:access-entry/{name}/"
                          f"{principal.split(':')[5].replace('/', '/', 1)}/{uuid.uuid4().hex[:16]}",
        # EKS's JSON gives times as epoch seconds.
        "createdAt": time.time(),
        "modifiedAt": time.time(),
        "tags": self._get_param("tags") or {},
        "username": principal,
        "type": self._get_param("type") or "STANDARD",
        "_policies": {},
    }
    entries[principal] = entry
    return 200, {}, json.dumps({"accessEntry": _public(entry)})


def _public(entry):
    return {k: v for k, v in entry.items() if not k.startswith("_")}


def describe_access_entry(self):
    _, entry = _entry(self, self._get_param("name"), unquote(self._get_param("principalArn")))
    return 200, {}, json.dumps({"accessEntry": _public(entry)})


def delete_access_entry(self):
    name, principal = self._get_param("name"), unquote(self._get_param("principalArn"))
    _, entries = _entries(self, name)
    _entry(self, name, principal)
    del entries[principal]
    return 200, {}, "{}"


def associate_access_policy(self):
    name, principal = self._get_param("name"), unquote(self._get_param("principalArn"))
    _, entry = _entry(self, name, principal)
    policy = self._get_param("policyArn") or ""
    if ACCESS_POLICY_PREFIX not in policy:
        raise eks_exceptions.InvalidParameterException(
            clusterName=name, nodegroupName=None, fargateProfileName=None, addonName=None,
            message=f"The policyArn parameter is not an EKS access policy: {policy}")
    now = time.time()
    association = {"policyArn": policy, "accessScope": self._get_param("accessScope") or {"type": "cluster"},
                   "associatedAt": entry["_policies"].get(policy, {}).get("associatedAt", now), "modifiedAt": now}
    entry["_policies"][policy] = association
    return 200, {}, json.dumps({"clusterName": name, "principalArn": principal, "associatedAccessPolicy": association})


def list_associated_access_policies(self):
    name, principal = self._get_param("name"), unquote(self._get_param("principalArn"))
    _, entry = _entry(self, name, principal)
    return 200, {}, json.dumps({"clusterName": name, "principalArn": principal,
                                "associatedAccessPolicies": list(entry["_policies"].values())})


for _action in (create_access_entry, describe_access_entry, delete_access_entry, associate_access_policy,
                list_associated_access_policies):
    setattr(EKSResponse, _action.__name__, _action)
# Before the server builds its routes: the access-entry paths. The principal ARN is
# URL-encoded in them, but decoded before routing, so it contains "/".
eks_urls.url_paths.update({
    "{0}/clusters/(?P<name>[^/]+)/access-entries$": eks_urls.response.dispatch,
    # One route for an entry and its policies: the action comes from botocore's model.
    "{0}/clusters/(?P<name>[^/]+)/access-entries/(?P<entry>.+)$": eks_urls.response.dispatch,
})

# --- 20. EKS cluster insights and add-ons ---------------------------------------------------
INSIGHT_STATUSES = ("PASSING", "WARNING", "ERROR", "UNKNOWN")
INSIGHT_CATEGORIES = ("UPGRADE_READINESS", "MISCONFIGURATION", "ROLLBACK_READINESS")
ADDON_STATUSES = ("CREATING", "ACTIVE", "CREATE_FAILED", "UPDATING", "DELETING", "DELETE_FAILED", "DEGRADED",
                  "UPDATE_FAILED")
ADDON_ISSUE_CODES = ("AccessDenied", "InternalFailure", "ClusterUnreachable", "InsufficientNumberOfReplicas",
                     "ConfigurationConflict", "AdmissionRequestDenied", "UnsupportedAddonModification",
                     "K8sResourceNotFound", "AddonSubscriptionNeeded", "AddonPermissionFailure")
INSIGHT_SUMMARY = ("id", "name", "category", "kubernetesVersion", "lastRefreshTime", "lastTransitionTime",
                   "description", "insightStatus")


def _invalid_parameter(name, message):
    return eks_exceptions.InvalidParameterException(
        clusterName=name, nodegroupName=None, fargateProfileName=None, addonName=None, message=message)


def _cluster_health(backend, cluster_name):
    """The cluster's insights and add-ons (ResourceNotFoundException for no such cluster)."""
    cluster = backend.describe_cluster(name=cluster_name)
    if not hasattr(cluster, "insights"):
        cluster.insights, cluster.addons = {}, {}
    return cluster


def _max_results(self, name):
    wanted = self._get_param("maxResults") or self.querystring.get("maxResults", [None])[0]
    wanted = 100 if wanted in (None, "") else int(wanted)
    if not 1 <= wanted <= 100:
        raise _invalid_parameter(name, "maxResults must be between 1 and 100")
    return wanted


def _page(self, name, items):
    """EKS's pagination: `nextToken` is the index of the next item, as opaque as any token."""
    token = self._get_param("nextToken") or self.querystring.get("nextToken", [None])[0]
    start = 0
    if token:
        try:
            start = int(base64.b64decode(token).decode())
        except (ValueError, UnicodeDecodeError):
            raise _invalid_parameter(name, "The nextToken is not valid") from None
    size = _max_results(self, name)
    page = items[start:start + size]
    following = start + size
    return page, (base64.b64encode(str(following).encode()).decode() if following < len(items) else None)


def list_insights(self):
    name = self._get_param("name")
    cluster = _cluster_health(self.eks_backend, name)
    wanted = self._get_param("filter") or {}
    insights = [i for i in cluster.insights.values()
                if (not wanted.get("categories") or i["category"] in wanted["categories"])
                and (not wanted.get("kubernetesVersions") or i["kubernetesVersion"] in wanted["kubernetesVersions"])
                and (not wanted.get("statuses") or i["insightStatus"]["status"] in wanted["statuses"])]
    page, following = _page(self, name, sorted(insights, key=lambda i: i["id"]))
    answer = {"insights": [{k: i[k] for k in INSIGHT_SUMMARY if k in i} for i in page]}
    if following:
        answer["nextToken"] = following
    return 200, {}, json.dumps(answer)


def describe_insight(self):
    name, insight_id = self._get_param("name"), self._get_param("id")
    cluster = _cluster_health(self.eks_backend, name)
    if insight_id not in cluster.insights:
        raise _not_found(f"No insight found with id {insight_id} for cluster {name}")
    return 200, {}, json.dumps({"insight": cluster.insights[insight_id]})


def _addon_now(addon):
    """An add-on as read now: CREATING becomes ACTIVE a second after it was created."""
    if addon["status"] == "CREATING" and time.time() - addon["createdAt"] >= 1:
        addon["status"] = "ACTIVE"
    return addon


def create_addon(self):
    name, addon_name = self._get_param("name"), self._get_param("addonName")
    cluster = _cluster_health(self.eks_backend, name)
    if not addon_name:
        raise _invalid_parameter(name, "addonName must be provided")
    if addon_name in cluster.addons:
        raise eks_exceptions.ResourceInUseException(
            clusterName=name, nodegroupName=None, fargateProfileName=None, addonName=addon_name,
            message=f"Addon already exists: {addon_name}")
    region, account = cluster.arn.split(":")[3], cluster.arn.split(":")[4]
    now = time.time()
    addon = {"addonName": addon_name, "clusterName": name, "status": "CREATING",
             "addonVersion": self._get_param("addonVersion") or "v1.0.0-eksbuild.1",
             "health": {"issues": []},
             "addonArn": f"arn:aws:eks:{region}:{account}:addon/{name}/{addon_name}/{uuid.uuid4()}",
             "createdAt": now, "modifiedAt": now, "tags": self._get_param("tags") or {}}
    if self._get_param("serviceAccountRoleArn"):
        addon["serviceAccountRoleArn"] = self._get_param("serviceAccountRoleArn")
    cluster.addons[addon_name] = addon
    return 200, {}, json.dumps({"addon": addon})


def _addon(self):
    name, addon_name = self._get_param("name"), self._get_param("addonName")
    cluster = _cluster_health(self.eks_backend, name)
    if addon_name not in cluster.addons:
        raise eks_exceptions.ResourceNotFoundException(
            clusterName=name, nodegroupName=None, fargateProfileName=None, addonName=addon_name,
            message=f"No addon: {addon_name} found in cluster: {name}")
    return cluster, _addon_now(cluster.addons[addon_name])


def describe_addon(self):
    _, addon = _addon(self)
    return 200, {}, json.dumps({"addon": addon})


def delete_addon(self):
    cluster, addon = _addon(self)
    del cluster.addons[addon["addonName"]]
    return 200, {}, json.dumps({"addon": {**addon, "status": "DELETING"}})


def list_addons(self):
    name = self._get_param("name")
    cluster = _cluster_health(self.eks_backend, name)
    page, following = _page(self, name, sorted(cluster.addons))
    answer = {"addons": page}
    if following:
        answer["nextToken"] = following
    return 200, {}, json.dumps(answer)


for _action in (list_insights, describe_insight, create_addon, describe_addon, delete_addon, list_addons):
    setattr(EKSResponse, _action.__name__, _action)
eks_urls.url_paths.update({
    "{0}/clusters/(?P<name>[^/]+)/insights$": eks_urls.response.dispatch,
    "{0}/clusters/(?P<name>[^/]+)/insights/(?P<id>[^/]+)$": eks_urls.response.dispatch,
    "{0}/clusters/(?P<name>[^/]+)/addons$": eks_urls.response.dispatch,
    "{0}/clusters/(?P<name>[^/]+)/addons/(?P<addonName>[^/]+)$": eks_urls.response.dispatch,
})

HARNESS_EKS = re.compile(r"/_harness/eks/(\d{12})/([a-z0-9-]+)/clusters/([^/]+)/(insights|addons/([^/]+)/health)")


def _harness_eks(path, body):
    """What EKS computes itself, set by the harness: an insight (as DescribeInsight answers it;
    its summary fields are ListInsights') or an add-on's status and health issues. (status,
    answer)."""
    from moto.eks.models import eks_backends

    account, region, name, what, addon_name = HARNESS_EKS.fullmatch(path).groups()
    try:
        cluster = _cluster_health(eks_backends[account][region], name)
    except eks_exceptions.ResourceNotFoundException:
        return 404, {"message": f"no cluster {name} in {account}/{region}"}
    if addon_name is None:
        status = (body.get("insightStatus") or {}).get("status")
        if not body.get("id") or body.get("category") not in INSIGHT_CATEGORIES or status not in INSIGHT_STATUSES:
            return 400, {"message": f"an insight needs an id, a category of {INSIGHT_CATEGORIES} and an "
                                    f"insightStatus.status of {INSIGHT_STATUSES}"}
        now = time.time()
        previous = cluster.insights.get(body["id"])
        changed = previous is None or previous["insightStatus"]["status"] != status
        cluster.insights[body["id"]] = {
            "name": body["id"], "kubernetesVersion": cluster.version, "description": "", "recommendation": "",
            "additionalInfo": {}, "resources": [], "lastRefreshTime": now,
            "lastTransitionTime": now if changed else previous["lastTransitionTime"], **body}
        return 200, cluster.insights[body["id"]]
    if addon_name not in cluster.addons:
        return 404, {"message": f"no add-on {addon_name} on {name}"}
    issues = body.get("issues") or []
    if body.get("status") not in ADDON_STATUSES or any(i.get("code") not in ADDON_ISSUE_CODES for i in issues):
        return 400, {"message": f"a status of {ADDON_STATUSES} and issues with a code of {ADDON_ISSUE_CODES}"}
    addon = cluster.addons[addon_name]
    addon.update(status=body["status"], health={"issues": issues}, modifiedAt=time.time())
    return 200, addon


def with_harness_routes(app):
    """moto's app, and the harness's own paths (`/_harness/...`: not AWS's API)."""
    def serve(environ, start_response):
        path = environ.get("PATH_INFO", "")
        if global_accelerator.serves(environ):
            return global_accelerator.serve(environ, start_response)
        if application_signals.serves(environ):
            return application_signals.serve(environ, start_response)
        if vpc_lattice.serves(environ):
            return vpc_lattice.serve(environ, start_response)
        if synthetics.serves(environ):
            return synthetics.serve(environ, start_response)
        if not HARNESS_EKS.fullmatch(path) or environ.get("REQUEST_METHOD") != "POST":
            return app(environ, start_response)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        try:
            body = json.loads(environ["wsgi.input"].read(length) or b"{}")
            code, answer = _harness_eks(path, body)
        except ValueError as e:
            code, answer = 400, {"message": f"not JSON: {e}"}
        text = json.dumps(answer).encode()
        start_response(f"{code} {'OK' if code == 200 else 'Error'}",
                       [("Content-Type", "application/json"), ("Content-Length", str(len(text)))])
        return [text]
    return serve


# --- 8. EventBridge's delivery ------------------------------------------------------------
EventTemplateParser.DEFAULT_EVENT_INPUT_TEMPLATE = EventTemplateParser.DEFAULT_EVENT_INPUT_TEMPLATE.replace(
    '"version": "0",', '"version": "0", "account": "<account>",')
_stock_send_to_targets = events_models.Rule.send_to_targets


def _value_at(event, path):
    value = event
    for key in path.removeprefix("$.").split(".") if path != "$" else []:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _transformed(event, transformer):
    """EventBridge's InputTransformer over `event`, as the JSON text Lambda receives."""
    if not transformer:
        return json.dumps(event)
    text = transformer["InputTemplate"]
    for name, path in transformer.get("InputPathsMap", {}).items():
        value = _value_at(event, path)
        inside = json.dumps(value if isinstance(value, str) else json.dumps(value))[1:-1]
        text = text.replace(f'"<{name}>"', f'"{inside}"').replace(f"<{name}>", json.dumps(value))
    return text


def _invoke_async(function_arn, payload):
    """What EventBridge does with a Lambda target: an asynchronous Invoke."""
    import urllib.parse
    import urllib.request

    port = os.environ.get("MOTO_PORT", "5000")
    request = urllib.request.Request(
        f"http://localhost:{port}/2015-03-31/functions/{urllib.parse.quote(function_arn, safe='')}/invocations",
        data=payload.encode(), headers={"X-Amz-Invocation-Type": "Event", "Content-Type": "application/json"})
    try:
        urllib.request.urlopen(request, timeout=30).read()
    except OSError as error:
        print(f"EventBridge could not deliver to {function_arn}: {error}", file=sys.stderr)


def _as_delivered(event):
    """An event as EventBridge delivers it: moto keeps `time` as epoch seconds and an
    `ingestion-time`; AWS's event has `time` in ISO 8601 (seconds, UTC) and no ingestion time."""
    delivered = {k: v for k, v in event.items() if k != "ingestion-time"}
    if isinstance(delivered.get("time"), (int, float)):
        delivered["time"] = datetime.datetime.fromtimestamp(delivered["time"], datetime.timezone.utc).strftime(
            "%Y-%m-%dT%H:%M:%SZ")
    return delivered


def _send_to_targets(self, original_event, *args, **kwargs):
    if self.state == "DISABLED" or not self.event_pattern.matches_event(original_event):
        return None
    if self.scheduled_expression and not self.event_pattern.get_pattern():
        return None
    functions = [t for t in self.targets if t["Arn"].split(":")[2:3] == ["lambda"]]
    for target in functions:
        payload = _transformed(_as_delivered(original_event), target.get("InputTransformer"))
        threading.Thread(target=_invoke_async, args=(target["Arn"], payload), daemon=True).start()
    topics = [t for t in self.targets if t["Arn"].split(":")[2:3] == ["sns"]]
    for target in topics:
        arn = target["Arn"].split(":")
        sns_backends[arn[4]][arn[3]].publish(
            message=_transformed(_as_delivered(original_event), target.get("InputTransformer")), arn=target["Arn"])
    others = [t for t in self.targets if t not in functions and t not in topics]
    if others:
        rest = copy.copy(self)
        rest.targets = others
        return _stock_send_to_targets(rest, original_event, *args, **kwargs)
    return None


events_models.Rule.send_to_targets = _send_to_targets



# --- 9. State machines from CloudFormation ------------------------------------------------
def _state_machine_definition(properties, account_id):
    if "DefinitionS3Location" in properties:
        location = properties["DefinitionS3Location"]
        key = s3_backends[account_id]["aws"].get_object(location["Bucket"], location["Key"])
        if key is None:
            raise AWSError(f"no definition at s3://{location['Bucket']}/{location['Key']}", "ValidationError", 400)
        definition = key.value.decode()
    elif "Definition" in properties:
        definition = json.dumps(properties["Definition"])
    else:
        definition = properties.get("DefinitionString", "")
    for name, value in (properties.get("DefinitionSubstitutions") or {}).items():
        definition = definition.replace("${%s}" % name, str(value))
    return definition


def _state_machine_from_cloudformation(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
    properties = cloudformation_json["Properties"]
    backend = sfn_responses.get_backend(account_id, region_name)
    return backend.create_state_machine(
        properties.get("StateMachineName", resource_name),
        _state_machine_definition(properties, account_id),
        properties.get("RoleArn", ""),
        tags=sfn_models.cfn_to_api_tags(properties.get("Tags", [])),
    )


sfn_models.StateMachine.create_from_cloudformation_json = classmethod(_state_machine_from_cloudformation)


# --- 10. AWS::NoValue, and IAM roles' inline policies from CloudFormation ----------------
_stock_clean_json = cfn_parsing.clean_json


def _clean_json(resource_json, resources_map):
    """moto's resolution of intrinsic functions, with what resolves to `AWS::NoValue` (None)
    removed from its list or object (moto's recursion comes back through here)."""
    if isinstance(resource_json, list):
        cleaned = [(_clean_json(item, resources_map), isinstance(item, dict)) for item in resource_json]
        return [value for value, intrinsic in cleaned if not (intrinsic and value is None)]
    cleaned = _stock_clean_json(resource_json, resources_map)
    if isinstance(resource_json, dict) and isinstance(cleaned, dict):
        return {key: value for key, value in cleaned.items()
                if not (value is None and isinstance(resource_json.get(key), dict))}
    return cleaned


cfn_parsing.clean_json = _clean_json
_stock_role_from_cloudformation = iam_models.Role.create_from_cloudformation_json.__func__


def _role_from_cloudformation(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
    for policy in cloudformation_json["Properties"].get("Policies", []):
        if not isinstance(policy["PolicyDocument"], str):
            policy["PolicyDocument"] = json.dumps(policy["PolicyDocument"])
        versioned = {"Version": "2012-10-17", **json.loads(policy["PolicyDocument"])}
        try:
            IAMPolicyDocumentValidator(json.dumps(versioned)).validate()
        except Exception:
            print(f"{resource_name}: policy {policy['PolicyName']} refused: {policy['PolicyDocument']}",
                  file=sys.stderr)
            raise
    return _stock_role_from_cloudformation(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)


iam_models.Role.create_from_cloudformation_json = classmethod(_role_from_cloudformation)

# --- 11. The state machine's calls made as its role ----------------------------------------
_stock_boto_client_for = sfn_boto_client.boto_client_for
# Role ARN -> (credentials, when to assume it again): Step Functions assumes the role per
# execution; once an hour per role is enough for credentials that last one.
_ROLE_CREDENTIALS = {}
_ROLE_CREDENTIALS_LOCK = threading.Lock()
_ROLE_CLIENTS = {}
_ROLE_CLIENTS_LOCK = threading.Lock()


def _credentials_of(role_arn, region):
    with _ROLE_CREDENTIALS_LOCK:
        credentials, renew_at = _ROLE_CREDENTIALS.get(role_arn, (None, 0))
        if time.time() >= renew_at:
            account = role_arn.split(":")[4]
            credentials = sts_backends[account]["global"].assume_role(
                region_name=region, role_session_name="states", role_arn=role_arn,
                policy=None, duration=3600, external_id=None)
            _ROLE_CREDENTIALS[role_arn] = (credentials, time.time() + 1800)
        return credentials


def _boto_client_as_role(region, service, state_credentials=None):
    role_arn = getattr(state_credentials, "role_arn", None)
    if not role_arn:
        return _stock_boto_client_for(region, service, state_credentials)
    from botocore.config import Config

    credentials = _credentials_of(role_arn, region)
    # A client per service, Region and credentials, kept: making one costs more CPU than most
    # calls made with it (boto3's clients are safe to share between threads; making them is not).
    key = (region, service, credentials.access_key_id)
    with _ROLE_CLIENTS_LOCK:
        if key not in _ROLE_CLIENTS:
            client = _stock_boto_client_for(region, service, state_credentials)
            _ROLE_CLIENTS[key] = boto3.client(
                service, region_name=region, endpoint_url=client.meta.endpoint_url,
                aws_access_key_id=credentials.access_key_id, aws_secret_access_key=credentials.secret_access_key,
                aws_session_token=credentials.session_token,
                config=Config(parameter_validation=False, retries={"max_attempts": 0, "total_max_attempts": 1},
                              connect_timeout=client.meta.config.connect_timeout,
                              read_timeout=client.meta.config.read_timeout))
        return _ROLE_CLIENTS[key]


# Every engine module imported the function by name: each one's name is replaced.
for _module in list(sys.modules.values()):
    if getattr(_module, "__name__", "").startswith("moto.stepfunctions.parser") and \
            getattr(_module, "boto_client_for", None) is _stock_boto_client_for:
        _module.boto_client_for = _boto_client_as_role


# --- 12. CloudFormation resource types moto lacks -------------------------------------------
# Where moto itself answers (not the front door: CloudFormation's calls are not the stack's
# roles' calls); set when it binds its port.
_OWN_ENDPOINT = []


def _api(service, account_id, region):
    """A client on moto as CloudFormation acts in `account_id` (moto tells accounts apart by the
    caller's credentials)."""

    credentials = _credentials_of(f"arn:aws:iam::{account_id}:role/cloudformation", region)
    endpoint = _OWN_ENDPOINT[0] if _OWN_ENDPOINT else f"http://localhost:{os.environ.get('MOTO_PORT', '5000')}"
    return boto3.client(service, region_name=region, endpoint_url=endpoint,
                        aws_access_key_id=credentials.access_key_id,
                        aws_secret_access_key=credentials.secret_access_key,
                        aws_session_token=credentials.session_token)


def _taken(client, operation, properties):
    """The properties the API operation takes under the same names (the CloudFormation types
    below mostly mirror their API)."""
    members = client.meta.service_model.operation_model(operation).input_shape.members
    return {k: v for k, v in properties.items() if k in members}


def _alarm(api, name, p):
    cloudwatch = api("cloudwatch")
    name = p.get("AlarmName", name)
    cloudwatch.put_metric_alarm(AlarmName=name, **_taken(cloudwatch, "PutMetricAlarm", {
        k: v for k, v in p.items() if k != "AlarmName"}))
    return name, {"Arn": cloudwatch.describe_alarms(AlarmNames=[name])["MetricAlarms"][0]["AlarmArn"]}


def _queue_policy(api, name, p):
    for url in p["Queues"]:
        api("sqs").set_queue_attributes(QueueUrl=url, Attributes={"Policy": json.dumps(p["PolicyDocument"])})
    return name, {}


def _topic_policy(api, name, p):
    for arn in p["Topics"]:
        api("sns").set_topic_attributes(TopicArn=arn, AttributeName="Policy", AttributeValue=json.dumps(p["PolicyDocument"]))
    return name, {}


def _subscription(api, name, p):
    arn = api("sns").subscribe(TopicArn=p["TopicArn"], Protocol=p["Protocol"], Endpoint=p["Endpoint"])["SubscriptionArn"]
    return arn, {"Arn": arn}


def _bucket_policy(api, name, p):
    api("s3").put_bucket_policy(Bucket=p["Bucket"], Policy=json.dumps(p["PolicyDocument"]))
    return p["Bucket"], {}


def _trail(api, name, p):
    cloudtrail = api("cloudtrail")
    name = p.get("TrailName", name)
    arn = cloudtrail.create_trail(Name=name, **_taken(cloudtrail, "CreateTrail", {
        k: v for k, v in p.items() if k not in ("TrailName", "IsLogging", "EventSelectors")}))["TrailARN"]
    if p.get("EventSelectors"):
        cloudtrail.put_event_selectors(TrailName=name, EventSelectors=p["EventSelectors"])
    if p.get("IsLogging"):
        cloudtrail.start_logging(Name=name)
    return name, {"Arn": arn}


def _event_bus_policy(api, name, p):
    events = api("events")
    bus = p.get("EventBusName", "default")
    if "Statement" in p:
        policy = {"Version": "2012-10-17", "Statement": [{"Sid": p["StatementId"], **p["Statement"]}]}
        events.put_permission(EventBusName=bus, Policy=json.dumps(policy))
    else:
        events.put_permission(EventBusName=bus, **_taken(events, "PutPermission", p))
    return p["StatementId"], {}


def _access_entry(api, name, p):
    eks = api("eks")
    entry = eks.create_access_entry(
        clusterName=p["ClusterName"], principalArn=p["PrincipalArn"],
        **{api_name: p[cfn] for cfn, api_name in (("Type", "type"), ("KubernetesGroups", "kubernetesGroups"),
                                                   ("Username", "username")) if cfn in p})["accessEntry"]
    for policy in p.get("AccessPolicies", []):
        scope = policy["AccessScope"]
        eks.associate_access_policy(
            clusterName=p["ClusterName"], principalArn=p["PrincipalArn"], policyArn=policy["PolicyArn"],
            accessScope={"type": scope["Type"], **({"namespaces": scope["Namespaces"]} if "Namespaces" in scope else {})})
    return f"{p['ClusterName']}|{p['PrincipalArn']}", {"AccessEntryArn": entry["accessEntryArn"]}


def _metric_filter(api, name, p):
    name = p.get("FilterName", name)
    api("logs").put_metric_filter(
        logGroupName=p["LogGroupName"], filterName=name, filterPattern=p["FilterPattern"],
        metricTransformations=[{"metricName": t["MetricName"], "metricNamespace": t["MetricNamespace"],
                                "metricValue": t["MetricValue"],
                                **({"defaultValue": float(t["DefaultValue"])} if "DefaultValue" in t else {}),
                                **({"unit": t["Unit"]} if "Unit" in t else {})}
                               for t in p["MetricTransformations"]])
    return name, {}


def _event_invoke_config(api, name, p):
    lambda_ = api("lambda")
    destinations = {kind: {"Destination": p["DestinationConfig"][kind]["Destination"]}
                    for kind in ("OnSuccess", "OnFailure") if kind in p.get("DestinationConfig", {})}
    qualifier = {} if p.get("Qualifier") in (None, "$LATEST") else {"Qualifier": p["Qualifier"]}
    lambda_.put_function_event_invoke_config(
        FunctionName=p["FunctionName"], **qualifier,
        **{k: p[k] for k in ("MaximumRetryAttempts", "MaximumEventAgeInSeconds") if k in p},
        **({"DestinationConfig": destinations} if destinations else {}))
    return f"{p['FunctionName']}|{p.get('Qualifier', '$LATEST')}", {}


def _by_api(type_name, create):
    """A CloudFormation model of `type_name` whose creation is `create(api, name, properties)` ->
    (physical id, attributes)."""
    def create_from_cloudformation_json(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
        physical_id, attributes = create(lambda service: _api(service, account_id, region_name),
                                         resource_name, cloudformation_json.get("Properties", {}))
        resource = cls()
        resource.physical_resource_id, resource.attributes = physical_id, attributes
        return resource

    return type(f"ByApi{type_name.replace(':', '')}", (CloudFormationModel,), {
        # moto files its models by the service its module names.
        "__module__": "moto.cloudformation.sandbox",
        "cloudformation_type": staticmethod(lambda: type_name),
        "cloudformation_name_type": staticmethod(lambda: ""),
        "has_cfn_attr": classmethod(lambda cls, attr: True),
        "get_cfn_attribute": lambda self, attribute_name: self.attributes[attribute_name],
        "create_from_cloudformation_json": classmethod(create_from_cloudformation_json),
    })


for _type, _create in {
    "AWS::CloudWatch::Alarm": _alarm,
    "AWS::SQS::QueuePolicy": _queue_policy,
    "AWS::SNS::TopicPolicy": _topic_policy,
    "AWS::SNS::Subscription": _subscription,
    "AWS::S3::BucketPolicy": _bucket_policy,
    "AWS::CloudTrail::Trail": _trail,
    "AWS::Events::EventBusPolicy": _event_bus_policy,
    "AWS::EKS::AccessEntry": _access_entry,
    "AWS::Logs::MetricFilter": _metric_filter,
    "AWS::Lambda::EventInvokeConfig": _event_invoke_config,
}.items():
    assert _type not in cfn_parsing.get_model_map(), f"moto models {_type} now: drop it here"
    _by_api(_type, _create)
for _cached in (cfn_parsing.get_model_list, cfn_parsing.get_model_map, cfn_parsing.get_name_type_map):
    _cached.cache_clear()


def _listener_default_actions(self, properties):
    """A `forward` with a `ForwardConfig` is kept as written, as the API takes it."""
    actions = [a for a in properties["DefaultActions"] if not (a["Type"] == "forward" and "ForwardConfig" in a)]
    converted = iter(_stock_listener_default_actions(self, {**properties, "DefaultActions": actions}))
    return [dict(a) if a["Type"] == "forward" and "ForwardConfig" in a else next(converted)
            for a in properties["DefaultActions"]]


def _target_group_attribute(self, attribute_name):
    """A target group's `Fn::GetAtt` attributes (moto's target group had none): an alarm's
    `TargetGroup` dimension is its full name, `targetgroup/<name>/<id>`."""
    return {
        "TargetGroupFullName": self.arn.split(":", 5)[5],
        "TargetGroupName": self.name,
        "TargetGroupArn": self.arn,
        "LoadBalancerArns": self.load_balancer_arns,
    }[attribute_name]


elbv2_models.FakeTargetGroup.get_cfn_attribute = _target_group_attribute
_stock_load_balancer_attribute = elbv2_models.FakeLoadBalancer.get_cfn_attribute


def _load_balancer_attribute(self, attribute_name):
    """An alarm's `LoadBalancer` dimension, `app/<name>/<id>` (moto raised NotImplementedError
    and left the `Fn::GetAtt` in the property)."""
    if attribute_name == "LoadBalancerFullName":
        return self.arn.split(":loadbalancer/", 1)[1]
    return _stock_load_balancer_attribute(self, attribute_name)


elbv2_models.FakeLoadBalancer.get_cfn_attribute = _load_balancer_attribute
elbv2_models.FakeTargetGroup.has_cfn_attr = classmethod(
    lambda cls, attr: attr in ("TargetGroupFullName", "TargetGroupName", "TargetGroupArn", "LoadBalancerArns"))
_stock_listener_default_actions = elbv2_models.ELBv2Backend.convert_and_validate_properties
elbv2_models.ELBv2Backend.convert_and_validate_properties = _listener_default_actions
elbv2_forwards.install(elbv2_models)


# --- 13. Execution status change events -------------------------------------------------------
# AWS leaves an input or output out of the event (`included: false`) beyond what fits it.
EVENT_DATA_LIMIT = 240 * 1024
_stock_terminated = sfn_execution.BaseExecutionWorkerCommunication.terminated


def _epoch_ms(moment):
    return int(moment.timestamp() * 1000) if moment else None


def _status_change_event(execution):
    def data(value):
        text = value if isinstance(value, str) or value is None else json.dumps(value)
        included = text is None or len(text.encode()) <= EVENT_DATA_LIMIT
        return (text if included else None), {"included": included}

    status = execution.exec_status
    given, input_details = data(execution.execution_input)
    output, output_details = data(execution.output)
    return {
        "executionArn": execution.exec_arn,
        "stateMachineArn": execution.state_machine.arn,
        "name": execution.name,
        "status": getattr(status, "value", status),
        "startDate": _epoch_ms(execution.start_date),
        "stopDate": _epoch_ms(execution.stop_date),
        "input": given,
        "output": output,
        "inputDetails": input_details,
        "outputDetails": output_details if output is not None else None,
        "error": execution.error,
        "cause": execution.cause,
    }


_stock_stop_execution = StepFunctionResponse.stop_execution


def _stop_execution(self):
    """15. StopExecution as AWS takes it: its `error` and `cause` (moto's backend stopped every
    execution with empty ones), within the same limits as SendTaskFailure's."""
    params = error_and_cause(self)
    arn = self._get_param("executionArn")
    backend = self.stepfunction_backend
    backend._validate_execution_arn(arn)
    machine = backend._get_state_machine_for_execution(arn)
    execution = next((e for e in machine.executions if e.execution_arn == arn), None)
    if execution is None:
        return _stock_stop_execution(self)  # moto's ExecutionDoesNotExist
    # Without the engine (a test's plain moto) no worker runs, and moto's own stop stands.
    worker = getattr(execution, "exec_worker", None)
    was_running = worker is not None and execution.exec_status == sfn_api.ExecutionStatus.RUNNING
    stop_date = datetime.datetime.now(datetime.timezone.utc)
    execution.stop(stop_date=stop_date, **params)
    if was_running and isinstance(worker.env.program_state(), ProgramStopped):
        execution.exec_status = sfn_api.ExecutionStatus.ABORTED
        execution.stop_date = stop_date
        execution.error, execution.cause = params.get("error"), params.get("cause")
        _put_status_change(execution)
    return ActionResult({"stopDate": stop_date})


StepFunctionResponse.stop_execution = _stop_execution


def _put_status_change(execution):
    """13. The execution's status change event, once."""
    if getattr(execution, "_status_change_put", False):
        return
    execution._status_change_put = True
    events_models.events_backends[execution.account_id][execution.region_name].put_events([{
        "Source": "aws.states",
        "DetailType": "Step Functions Execution Status Change",
        "Resources": [execution.exec_arn],
        "Detail": json.dumps(_status_change_event(execution)),
    }])


def _terminated_with_event(self):
    execution = self.execution
    # 15. A stop said at once (StopExecution) keeps the stop's date, not the worker's return.
    stopped_at = execution.stop_date if getattr(execution, "_status_change_put", False) else None
    _stock_terminated(self)
    if stopped_at is not None:
        execution.stop_date = stopped_at
    # 15. A stop's error and cause stay on the execution.
    stopped = self.execution.exec_worker.env.program_state()
    if isinstance(stopped, ProgramStopped):
        execution.error, execution.cause = stopped.error, stopped.cause
    _put_status_change(execution)


sfn_execution.BaseExecutionWorkerCommunication.terminated = _terminated_with_event


# --- 16. The payload limit as AWS counts it -------------------------------------------------
PAYLOAD_LIMIT_BYTES = 262_144


def _within_payload_limit(value):
    text = value if isinstance(value, str) else json.dumps(
        value, cls=sfn_encoding._DateTimeEncoder, separators=(",", ":"), ensure_ascii=False)
    return len(text.encode("utf-8")) <= PAYLOAD_LIMIT_BYTES


for _module in (sfn_state, sfn_state_task_lambda, sfn_state_task_service):
    _module.is_within_size_quota = _within_payload_limit
_stock_before_service_task = sfn_state_task_service.StateTaskService._before_eval_execution
_stock_lambda_parameters = sfn_state_task_lambda.StateTaskLambda._eval_parameters


def _before_service_task(self, env, resource_runtime_part, raw_parameters, state_credentials):
    """A task's input, its Parameters, is held to the limit as it is scheduled."""
    self._verify_size_quota(env=env, value=raw_parameters)
    return _stock_before_service_task(self, env, resource_runtime_part, raw_parameters, state_credentials)


def _lambda_parameters(self, env):
    """A Lambda function task's input (its payload) is held to the limit as it is scheduled."""
    parameters = _stock_lambda_parameters(self, env)
    self._verify_size_quota(env=env, value=parameters["Payload"])
    return parameters


sfn_state_task_service.StateTaskService._before_eval_execution = _before_service_task
sfn_state_task_lambda.StateTaskLambda._eval_parameters = _lambda_parameters


# 18. Change Calendars.
import icalendar  # noqa: E402
from moto.ssm import models as ssm_models  # noqa: E402
from moto.ssm import exceptions as ssm_exceptions  # noqa: E402
from moto.ssm.responses import SimpleSystemManagerResponse  # noqa: E402

_stock_document_init = ssm_models.Document.__init__
_stock_validate_document_format = ssm_models._validate_document_format


def _document_init(self, account_id, name, version_name, content, document_type, document_format, *args, **kwargs):
    if document_type != "ChangeCalendar" or document_format != "TEXT":
        return _stock_document_init(self, account_id, name, version_name, content, document_type,
                                    document_format, *args, **kwargs)
    try:
        calendar = icalendar.Calendar.from_ical(content)
    except ValueError:
        raise ssm_exceptions.InvalidDocumentContent("The content for the document is not valid.")
    kind = str(calendar.get("X-CALENDAR-TYPE", "DEFAULT_OPEN"))
    if kind not in ("DEFAULT_OPEN", "DEFAULT_CLOSED"):
        raise ssm_exceptions.InvalidDocumentContent(f"X-CALENDAR-TYPE must be DEFAULT_OPEN or DEFAULT_CLOSED, not {kind}")
    requires, attachments, target_type = (list(args) + [None, None, None])[:3]
    self.name, self.version_name, self.content = name, version_name, content
    self.document_type, self.document_format = document_type, document_format
    self.requires = kwargs.get("requires", requires)
    self.attachments = kwargs.get("attachments", attachments)
    self.target_type = kwargs.get("target_type", target_type)
    self.status, self.document_version = "Active", kwargs.get("document_version", "1")
    self.owner, self.created_date = account_id, ssm_models.utcnow()
    self.content_json, self.schema_version = {}, "2.0"
    self.description = str(calendar.get("X-WR-CALDESC", "")) or None
    self.outputs = self.files = None
    self.platform_types, self.parameter_list = [], []
    self.calendar = calendar


def _validate_document_format(document_format):
    if document_format != "TEXT":
        _stock_validate_document_format(document_format)


def _as_utc(value):
    """An iCalendar DTSTART/DTEND (a date-time with or without a zone, or a date) in UTC."""
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        return value.astimezone(datetime.timezone.utc)
    return datetime.datetime(value.year, value.month, value.day, tzinfo=datetime.timezone.utc)


def _calendar_events(calendar):
    for event in calendar.walk("VEVENT"):
        start = _as_utc(event.decoded("DTSTART"))
        end = _as_utc(event.decoded("DTEND")) if event.get("DTEND") else start + datetime.timedelta(days=1)
        yield start, end


class _InvalidDocumentType(ssm_exceptions.SSMException):
    def __init__(self, message):
        super().__init__("InvalidDocumentType", message)


def get_calendar_state(self):
    names = self._get_param("CalendarNames") or []
    at_text = self._get_param("AtTime")
    if not names:
        raise ssm_exceptions.ValidationException("CalendarNames must name at least one calendar")
    try:
        at = _as_utc(datetime.datetime.fromisoformat(at_text.replace("Z", "+00:00"))) if at_text \
            else datetime.datetime.now(datetime.timezone.utc)
    except ValueError:
        raise ssm_exceptions.ValidationException(f"AtTime {at_text} is not an ISO 8601 time")
    closed, transitions = False, []
    for reference in names:
        name = reference.split(":document/", 1)[1] if reference.startswith("arn:") and ":document/" in reference else reference
        documents = self.ssm_backend._documents.get(name)
        if documents is None:
            raise ssm_exceptions.InvalidDocument(f"Document {reference} does not exist.")
        document = documents.get_default_version()
        if document.document_type != "ChangeCalendar":
            raise _InvalidDocumentType(f"Document {reference} is not a ChangeCalendar document.")
        in_event = False
        for start, end in _calendar_events(document.calendar):
            in_event |= start <= at < end
            transitions.extend(t for t in (start, end) if t > at)
        default_open = str(document.calendar.get("X-CALENDAR-TYPE", "DEFAULT_OPEN")) == "DEFAULT_OPEN"
        closed |= in_event if default_open else not in_event
    answer = {"State": "CLOSED" if closed else "OPEN", "AtTime": at.strftime("%Y-%m-%dT%H:%M:%SZ")}
    if transitions:
        answer["NextTransitionTime"] = min(transitions).strftime("%Y-%m-%dT%H:%M:%SZ")
    return ActionResult(answer)


ssm_models.Document.__init__ = _document_init
ssm_models._validate_document_format = _validate_document_format
SimpleSystemManagerResponse.get_calendar_state = get_calendar_state


# --- 19. A directly invoked function's errors, named as Step Functions names them ----------------
from botocore.exceptions import BotoCoreError  # noqa: E402
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (  # noqa: E402
    state_task_service_lambda as sfn_state_task_service_lambda,
)

_stock_direct_lambda_error = sfn_state_task_lambda.StateTaskLambda._from_error


def _direct_lambda_error(self, env, ex):
    if isinstance(ex, sfn_state_task_lambda.ClientError):
        error, cause = sfn_state_task_service_lambda.StateTaskServiceLambda._error_cause_from_client_error(ex)
    elif isinstance(ex, BotoCoreError):
        error, cause = "Lambda.SdkClientException", str(ex)
    else:
        return _stock_direct_lambda_error(self, env, ex)
    return sfn_state_task_lambda.FailureEvent(
        env=env,
        error_name=sfn_state_task_lambda.CustomErrorName(error),
        event_type=sfn_state_task_lambda.HistoryEventType.LambdaFunctionFailed,
        event_details=sfn_state_task_lambda.EventDetails(
            lambdaFunctionFailedEventDetails=sfn_state_task_lambda.LambdaFunctionFailedEventDetails(
                error=error, cause=cause)),
    )


sfn_state_task_lambda.StateTaskLambda._from_error = _direct_lambda_error

_stock_lambda_error_cause = sfn_state_task_service_lambda.StateTaskServiceLambda._error_cause_from_client_error


def _lambda_error_cause(client_error):
    """An answer without a request id (or an error code: a proxy's 502) is still a Lambda error
    to the state machine: moto's wording indexed them and raised KeyError, which lost a Map's
    iteration (a fleet's cell that never started)."""
    response = client_error.response
    response.setdefault("Error", {}).setdefault("Code", "ServiceException")
    response["Error"].setdefault("Message", "")
    response.setdefault("ResponseMetadata", {}).setdefault("RequestId", "")
    response["ResponseMetadata"].setdefault("HTTPStatusCode", 0)
    return _stock_lambda_error_cause(client_error)


sfn_state_task_service_lambda.StateTaskServiceLambda._error_cause_from_client_error = staticmethod(_lambda_error_cause)


# --- 23. A timed-out execution's stopDate ------------------------------------------------------
_stock_describe_execution = StepFunctionResponse.describe_execution
_stock_list_executions = StepFunctionResponse.list_executions


def _with_stop_date(backend, described):
    if getattr(described.get("status"), "value", described.get("status")) == "TIMED_OUT":
        described.setdefault("stopDate", backend.describe_execution(described["executionArn"]).stop_date)
    return described


def _describe_execution(self):
    answer = _stock_describe_execution(self)
    _with_stop_date(self.stepfunction_backend, answer.result)
    return answer


def _list_executions(self):
    answer = _stock_list_executions(self)
    for listed in answer.result["executions"]:
        _with_stop_date(self.stepfunction_backend, listed)
    return answer


StepFunctionResponse.describe_execution = _describe_execution
StepFunctionResponse.list_executions = _list_executions


# --- 26. GetExecutionHistory at the cost of its JSON, in pages as AWS gives them ------------
_EPOCH_SECONDS = moto_serialize.TimestampSerializer(moto_serialize.TimestampSerializer.TIMESTAMP_FORMAT_UNIX)
# Step Functions' page sizes: 100 when `maxResults` is absent or 0, at most 1000.
_HISTORY_PAGE, _HISTORY_PAGE_MAX = 100, 1000
# Each execution's events as JSON 1.0 gives them, converted once: a history only grows (the
# engine records an event and its id together, under its event manager's lock), and the sandbox
# reads each one every second or two. Keyed by the execution's event manager too, so that an
# execution started again under the same ARN (after a moto reset) starts a list of its own.
_CONVERTED_HISTORIES = {}
_CONVERTED_LOCK = threading.Lock()


def _as_json_1_0(value):
    """The engine's history as JSON 1.0 gives it: no null members; a timestamp (an event's
    `timestamp`, kept by the engine as a datetime or an ISO string) as epoch seconds to the ms."""
    if isinstance(value, dict):
        return {k: (_EPOCH_SECONDS._convert_timestamp_to_str(v, "unixtimestamp") if k == "timestamp"
                    else _as_json_1_0(v)) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_as_json_1_0(v) for v in value]
    return value


def _converted_history(backend, execution_arn):
    """The execution's events so far, oldest first (ExecutionDoesNotExist as moto refuses it)."""
    if not isinstance(backend, sfn_parser_models.StepFunctionsParserBackend):
        # moto without its engine makes a history up (its SF_EXECUTION_HISTORY_TYPE setting).
        return [_as_json_1_0(dict(event)) for event in backend.get_execution_history(execution_arn)["events"]]
    env = backend.describe_execution(execution_arn=execution_arn).exec_worker.env
    if env is None:  # not started yet
        return []
    manager = env.event_manager
    with manager._mutex, _CONVERTED_LOCK:
        kept = _CONVERTED_HISTORIES.get(execution_arn)
        if kept is None or kept[0] is not manager:
            kept = _CONVERTED_HISTORIES[execution_arn] = (manager, [])
        recorded, converted = manager._history_event_list, kept[1]
        converted.extend(_as_json_1_0(dict(event)) for event in recorded[len(converted):])
        return list(converted)


def _get_execution_history(self):
    execution_arn = self._get_param("executionArn")
    size, reverse = self._get_param("maxResults") or _HISTORY_PAGE, bool(self._get_param("reverseOrder"))
    if not 0 < size <= _HISTORY_PAGE_MAX:
        bound = "greater than or equal to 0" if size < 0 else f"less than or equal to {_HISTORY_PAGE_MAX}"
        raise sfn_exceptions.ValidationException(f"1 validation error detected: Value '{size}' at 'maxResults' "
                                                 f"failed to satisfy constraint: Member must have value {bound}")
    events = _converted_history(self.stepfunction_backend, execution_arn)
    # The token names the id of the next event to give (ids run 1, 2, ... in order), so a page
    # read newest first stays where it was while the history grows.
    next_id = len(events) if reverse else 1
    token = self._get_param("nextToken")
    if token:
        try:
            given = json.loads(base64.urlsafe_b64decode(token.encode()))
            if (given["executionArn"], given["reverseOrder"]) != (execution_arn, reverse):
                raise ValueError("another request's token")
            next_id = int(given["nextEventId"])
        except (ValueError, KeyError, TypeError) as e:
            raise AWSError(f"Invalid Token: {e}", "InvalidToken", 400) from e
    if reverse:
        page = events[max(next_id - size, 0):next_id][::-1]
        following = page[-1]["id"] - 1 if page else 0
        more = following >= 1
    else:
        page = events[next_id - 1:next_id - 1 + size]
        following = page[-1]["id"] + 1 if page else next_id
        more = following <= len(events)
    answer = {"events": page}
    if more:
        answer["nextToken"] = base64.urlsafe_b64encode(json.dumps(
            {"executionArn": execution_arn, "reverseOrder": reverse, "nextEventId": following}).encode()).decode()
    return 200, {"Content-Type": "application/x-amz-json-1.0"}, json.dumps(answer)


StepFunctionResponse.get_execution_history = _get_execution_history


# --- 27. A definition parsed once ----------------------------------------------------------
_stock_asl_parse = AmazonStateLanguageParser.parse


@functools.lru_cache(maxsize=16)
def _asl_syntax_tree(definition):
    """The definition's syntax tree (its syntax errors raised, and not kept). Read-only to the
    preprocessor, so executions running at once share it."""
    return _stock_asl_parse(definition)[1]


def _asl_parse(definition):
    # Each caller gets components of its own: they keep per-execution state (retry counters'
    # heap keys), so only the tree is shared.
    tree = _asl_syntax_tree(definition)
    if _LEFT_FOR_THE_PARENT:
        _leave_for_the_parent(definition)
    return Preprocessor().visit(tree), tree


# With --fork-servers: the folder where each server leaves the definitions it parsed that its
# parent had not, and the names (sha256) of those the parent has parsed. The parent parses them
# before its next fork, so the next servers inherit the trees: every sandbox deploys the same
# stack, whose definitions cost about a second of CPU each to parse.
_LEFT_FOR_THE_PARENT = []
_PARSED_BY_THE_PARENT = set()
_PARENT_PARSES_AT_MOST = 8


def _leave_for_the_parent(definition):
    name = hashlib.sha256(definition.encode()).hexdigest()
    path = os.path.join(_LEFT_FOR_THE_PARENT[0], f"{name}.json")
    if name in _PARSED_BY_THE_PARENT or os.path.exists(path):
        return
    written = f"{path}.{os.getpid()}"
    try:
        with open(written, "w") as f:
            f.write(definition)
        os.replace(written, path)
    except OSError:  # the parent gone with its folder: a cache, never a reason to fail a parse
        pass


def _parse_what_servers_left():
    folder = _LEFT_FOR_THE_PARENT[0]
    for entry in sorted(os.listdir(folder)):
        name, _, kind = entry.partition(".")
        if kind != "json" or name in _PARSED_BY_THE_PARENT or len(_PARSED_BY_THE_PARENT) >= _PARENT_PARSES_AT_MOST:
            continue
        _PARSED_BY_THE_PARENT.add(name)
        with open(os.path.join(folder, entry)) as f:
            definition = f.read()
        try:
            _asl_syntax_tree(definition)
        except Exception:  # noqa: BLE001 - a definition moto refuses is refused by each server itself
            pass


AmazonStateLanguageParser.parse = staticmethod(_asl_parse)


# --- 28. moto's services listed once --------------------------------------------------------
# moto's dispatcher lists its package's folders (a listdir and some 200 isdir calls) on every
# request to tell a service's own host name; they do not change while it runs.
_MOTO_MODULES = tuple(moto_backends.list_of_moto_modules())
moto_backends.list_of_moto_modules = lambda: _MOTO_MODULES


# --- 29. GetMetricData in one pass over its window -------------------------------------------
_stock_get_metric_data = cloudwatch_models.CloudWatchBackend.get_metric_data


def _in_query(datum, query):
    """Whether moto's GetMetricData counts the data point in a MetricStat query: by namespace and
    name, or, when the query names dimensions, by name and dimensions alone (moto's filter, kept)."""
    metric, unit = query["MetricStat"]["Metric"], query["MetricStat"].get("Unit")
    if datum.name != metric["MetricName"] or (unit and datum.unit != unit):
        return False
    dimensions = sorted(cloudwatch_models.Dimension(name=d["Name"], value=d["Value"])
                        for d in metric.get("Dimensions", []))
    return sorted(datum.dimensions) == dimensions if dimensions else datum.namespace == metric["Namespace"]


def _get_metric_data(self, queries, start_time, end_time, scan_by="TimestampAscending"):
    if any(q.get("Expression", "").startswith("SELECT") for q in queries) \
            or start_time.replace(microsecond=0) >= end_time.replace(microsecond=0):
        return _stock_get_metric_data(self, queries, start_time, end_time, scan_by)  # its refusals too
    start_time, end_time = start_time.replace(microsecond=0), end_time.replace(microsecond=0)
    window = [datum for datum in self.get_all_metrics() if start_time <= datum.timestamp < end_time]
    results, returned = [], []
    for query in (q for q in queries if "MetricStat" in q):
        stat, period = query["MetricStat"]["Stat"], datetime.timedelta(seconds=int(query["MetricStat"]["Period"]))
        periods = {}
        for datum in window:
            if _in_query(datum, query):
                periods.setdefault((datum.timestamp - start_time) // period, []).append(datum)
        values, timestamps = [], []
        for index in sorted(periods, reverse=scan_by == "TimestampDescending"):
            statistics = cloudwatch_models.Statistics([stat], start_time + index * period)
            statistics.metric_data = periods[index]
            values.append(statistics.get_statistics_for_type(stat))
            timestamps.append(statistics.timestamp)
        label = query.get("Label") or f"{query['MetricStat']['Metric']['MetricName']} {stat}"
        result = {"id": query["Id"], "label": label, "values": values, "timestamps": timestamps,
                  "status_code": "Complete"}
        results.append(result)
        if query.get("ReturnData", True):
            returned.append(dict(result))
    for query in (q for q in queries if "Expression" in q):
        values, timestamps = cloudwatch_models.parse_expression(query["Expression"], results)
        returned.append({"id": query["Id"], "label": query.get("Label") or query["Id"], "values": values,
                         "timestamps": timestamps, "status_code": "Complete"})
    return returned


cloudwatch_models.CloudWatchBackend.get_metric_data = _get_metric_data


def serve_on_a_port_of_its_own(host):
    """moto_server's app on a port the kernel picks, announced on stdout."""
    from werkzeug.serving import make_server

    app = DomainDispatcherApplication(create_backend_app)
    app.debug = True  # as moto_server has it
    server = make_server(host, 0, with_harness_routes(app), threaded=True, request_handler=MotoRequestHandler)
    # moto's own notion of its port (its engine's callbacks), unless the caller set one.
    os.environ.setdefault("MOTO_PORT", str(server.port))
    _OWN_ENDPOINT.append(f"http://{host}:{server.port}")
    print(json.dumps({"endpoint": f"http://{host}:{server.port}"}), flush=True)
    # The caller may close the pipe after the first line; nothing else goes to stdout.
    sys.stdout = open(os.devnull, "w")
    server.serve_forever()


# The services the sandbox's world, stack and functions call (moto's names for them).
_SANDBOX_SERVICES = ("awslambda", "cloudformation", "cloudwatch", "dynamodb", "ec2", "eks", "elbv2", "events",
                     "iam", "logs", "route53", "s3", "secretsmanager", "sns", "sqs", "ssm", "stepfunctions", "sts")


def _definitions_folder():
    """This forking process's folder for patch 27's definitions, named by its pid; those of
    forking processes that are gone (killed: no exit handler ran) are removed."""
    for stale in glob.glob(os.path.join(tempfile.gettempdir(), "moto-definitions-*")):
        try:
            os.kill(int(stale.rsplit("-", 1)[1]), 0)
        except ProcessLookupError:
            shutil.rmtree(stale, ignore_errors=True)
        except (ValueError, PermissionError):
            pass
    folder = os.path.join(tempfile.gettempdir(), f"moto-definitions-{os.getpid()}")
    os.makedirs(folder, exist_ok=True)
    return folder


def fork_servers(host):
    """A fresh server per line on stdin, forked from this process (no thread has started here, and
    no request was served); ends at the end of stdin. The servers are their own sessions, so that
    their caller can end each as a process group, and are reaped as they end."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    # moto imports a service's responses when it first serves it: done here once, not per server.
    for service in _SANDBOX_SERVICES:
        importlib.import_module(f"moto.{service}.urls")
    # The models of the clients the servers make on themselves (patch 12's resources, the state
    # machine's calls as its role), loaded once here: botocore's loader keeps them.
    for service in ("cloudtrail", "cloudwatch", "eks", "events", "lambda", "logs", "s3", "sns", "sqs", "sts"):
        boto3.client(service, region_name="us-east-1", endpoint_url="http://127.0.0.1:9",
                     aws_access_key_id="unused", aws_secret_access_key="unused")
    _LEFT_FOR_THE_PARENT.append(_definitions_folder())
    atexit.register(shutil.rmtree, _LEFT_FOR_THE_PARENT[0], ignore_errors=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # the folder removed when ended so too
    for line in sys.stdin:
        wanted = json.loads(line)
        _parse_what_servers_left()
        announce_read, announce_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.setsid()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                os.close(announce_read)
                log = os.open(wanted["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
                os.dup2(log, 1)
                os.dup2(log, 2)
                os.environ.clear()
                os.environ.update(wanted["env"])
                sys.stdout = os.fdopen(announce_write, "w")
                serve_on_a_port_of_its_own(host)
            finally:
                os._exit(1)
        os.close(announce_write)
        with os.fdopen(announce_read) as announced:
            endpoint = announced.readline()
        answer = {"pid": pid, **json.loads(endpoint)} if endpoint else {"pid": pid, "error": "did not start"}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument("-H", "--host", default="127.0.0.1")
    options.add_argument("-p", "--port", type=int, default=None)
    options.add_argument("--fork-servers", action="store_true")
    known, rest = options.parse_known_args()
    if known.fork_servers and not rest:
        fork_servers(known.host)
    elif known.port == 0 and not rest:
        serve_on_a_port_of_its_own(known.host)
    else:
        main()

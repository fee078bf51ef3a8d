"""moto_server, plus two things moto 5.2.5 lacks that the tests need. Everything else is
stock moto.

1. PutCompositeAlarm. moto models a composite alarm as an alarm with an `AlarmRule`
   (DescribeAlarms returns it under CompositeAlarms, SetAlarmState drives it) but has no
   PutCompositeAlarm action (HTTP 500 NotImplementedError). Added on moto's own backend, so
   the real SDK call works over the wire.
2. The naming rules of Step Functions' AWS SDK integrations
   (`arn:aws:states:::aws-sdk:<service>:<action>`). AWS documents that their parameters are
   written in PascalCase whatever the service's own casing (EKS DescribeCluster takes `Name`)
   and that results come back in PascalCase (`Cluster.Status`). moto's engine passes the
   parameters to boto3 verbatim and returns boto3's casing (its normalisation hooks are empty
   stubs), so a definition written for AWS fails in moto. This fills the two hooks from the
   botocore service model.

Usage: exactly as moto_server, e.g. python moto_server.py -H 127.0.0.1 -p 5000
"""
import botocore.session
from botocore import xform_name
from moto.cloudwatch.responses import CloudWatchResponse
from moto.core.responses import EmptyResult
from moto.server import main
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_aws_sdk import (
    StateTaskServiceAwsSdk,
)


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

_models = botocore.session.get_session()


def _operation(task):
    model = _models.get_service_model(task._get_boto_service_name())
    action = task._get_boto_service_action()
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

if __name__ == "__main__":
    main()

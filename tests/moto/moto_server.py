"""moto_server, plus the one CloudWatch action the tests need that moto 5.2.5 lacks.

moto models a composite alarm as an alarm with an `AlarmRule` (DescribeAlarms returns it
under CompositeAlarms, SetAlarmState drives it) but has no PutCompositeAlarm action: calling
it answers HTTP 500 NotImplementedError. This adds the action on top of moto's own backend,
so the real SDK call works over the wire; everything else is stock moto.

Usage: exactly as moto_server, e.g. python moto_server.py -H 127.0.0.1 -p 5000
"""
from moto.cloudwatch.responses import CloudWatchResponse
from moto.core.responses import EmptyResult
from moto.server import main


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

if __name__ == "__main__":
    main()

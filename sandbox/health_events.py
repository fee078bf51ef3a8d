"""AWS Health events, delivered as AWS delivers them.

AWS Health tells EventBridge of an issue with a service in a Region (`source` `aws.health`,
detail-type `AWS Health Event`, the documented detail: eventArn, service, eventTypeCode,
eventTypeCategory, statusCode, eventRegion, startTime, eventDescription), on the account's
default bus, when it opens, as it is updated, and when it closes. The stack's `AwsHealthEvent`
rule passes the issues of EKS, ELB, EC2 and Route 53 to evaluate-alarms (`healthEvent`), through
Lambda's event queue (event_queue.py). The queue is the function's, one for both of its rules:
the alarm events' (alarm_events.py) delivers these too and hands their answers here
(`AlarmEvents.others`). Every answer is kept in `reactions`, in order.
"""
import json
import time
import uuid
from datetime import datetime, timezone

HTTP_DATE = "%a, %d %b %Y %H:%M:%S GMT"  # as AWS Health writes its times


class HealthEvents:
    OPERATION = "healthEvent"

    def __init__(self, client, log):
        self.client, self.log = client, log
        self.reactions = []

    def reacted(self, payload, error, answer):
        self.reactions.append({"detail": payload.get("detail"), "error": error, "answer": answer})
        detail = payload.get("detail") or {}
        self.log(f"AWS Health event: {detail.get('service')} {detail.get('statusCode')} in "
                 f"{detail.get('eventRegion')}: " + (f"evaluate-alarms failed: {answer}" if error else
                                                     str((answer or {}).get("recorded"))))

    def put(self, service, region, status="open", event_arn=None, description="We are investigating an issue.",
            updated=None):
        """AWS Health's event for an issue of `service` in `region` (`open` or `closed`), last
        updated at `updated` (a datetime; now if not given); the event's ARN (give it again to
        close the same issue)."""
        code = f"AWS_{service}_OPERATIONAL_ISSUE"
        event_arn = event_arn or f"arn:aws:health:{region}::event/{service}/{code}/{code}_{uuid.uuid4().hex[:8]}"
        now = datetime.now(timezone.utc)
        updated = updated or now
        detail = {
            "eventArn": event_arn, "service": service, "eventTypeCode": code, "eventTypeCategory": "issue",
            "eventScopeCode": "PUBLIC", "communicationId": uuid.uuid4().hex,
            "startTime": now.strftime(HTTP_DATE), "lastUpdatedTime": updated.strftime(HTTP_DATE),
            "statusCode": status, "eventRegion": region,
            "eventDescription": [{"language": "en_US", "latestDescription": description}],
            "affectedEntities": [],
        }
        answer = self.client("events").put_events(Entries=[{
            "Source": "aws.health", "DetailType": "AWS Health Event", "Detail": json.dumps(detail), "Time": now,
        }])
        if answer.get("FailedEntryCount"):
            raise RuntimeError(f"EventBridge refused the AWS Health event: {answer['Entries']}")
        return event_arn

    def answered(self, event_arn, status, timeout=30):
        """The function's answer to the event of `event_arn` with `status`, once delivered."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for reaction in self.reactions:
                detail = reaction["detail"] or {}
                if detail.get("eventArn") == event_arn and detail.get("statusCode") == status:
                    if reaction["error"]:
                        raise RuntimeError(f"evaluate-alarms failed the AWS Health event: {reaction['answer']}")
                    return reaction["answer"]
            time.sleep(0.1)
        raise TimeoutError(f"the AwsHealthEvent rule delivered nothing for {event_arn} ({status}) in {timeout} s")

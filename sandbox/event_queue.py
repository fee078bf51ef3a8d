"""Lambda's event queue for one function the stack's rules invoke asynchronously.

moto's EventBridge invokes a rule's Lambda target asynchronously (`X-Amz-Invocation-Type:
Event`, tests/moto/moto_server.py); the front door hands those invocations of this function to
the queue (`FrontDoor.intercept_async`), and a pump delivers them one after the other through
the sandbox's Lambda, keeping every answer. `held()` delays them (a delivery that arrives late).
Not modelled: Lambda's retries of a failed asynchronous invocation and its on-failure
destination.
"""
import contextlib
import json
import queue
import threading


class EventQueue:
    def __init__(self, front_door, invoke, function, on_answer):
        """`invoke(function, payload)` gives (function error, answer); `on_answer(payload, error,
        answer)` hears each delivery's outcome."""
        self.invoke = invoke
        self.function = function
        self.on_answer = on_answer
        self.waiting = queue.Queue()
        self.stopping = threading.Event()
        self.flowing = threading.Event()
        self.flowing.set()
        self.busy = threading.Lock()  # held by the pump while it delivers
        front_door.intercept_async(function.split(":")[6], self.waiting.put)
        self.thread = threading.Thread(target=self.pump, name=f"events-{function.split(':')[6]}", daemon=True)
        self.thread.start()

    def stop(self):
        self.stopping.set()
        self.thread.join(timeout=10)

    @contextlib.contextmanager
    def held(self):
        """Events wait in the queue until the block ends."""
        self.flowing.clear()
        with self.busy:  # and a delivery under way has ended
            pass
        try:
            yield
        finally:
            self.flowing.set()

    def pump(self):
        while not self.stopping.is_set():
            if not self.flowing.wait(timeout=0.5):
                continue
            with self.busy:
                if self.flowing.is_set():
                    self.deliver_waiting()

    def deliver_waiting(self):
        """Delivers the next queued event (waiting up to half a second for one)."""
        try:
            body = self.waiting.get(timeout=0.5)
        except queue.Empty:
            return
        payload = json.loads(body)
        error, answer = self.invoke(self.function, payload)
        self.on_answer(payload, error, answer)

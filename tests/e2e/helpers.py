"""What the end-to-end tests share: the world's weights at the start and after promotion, and
foreign weight changes. (Manual plans and executions are the sandbox's: sandbox.scenarios.)"""

BASELINE = {"listener :80": (100, 0), "app.example.com.": (100, 0)}
PROMOTED = {"listener :80": (0, 100), "app.example.com.": (0, 100)}


def captured(line):
    """pytest captures the live view and shows it for a failing test."""
    print(line)


def move_listener_by_hand(sandbox, blue, green):
    """Someone else (a person, another tool) sets the listener's weights."""
    world = sandbox.world
    sandbox.client("elbv2").modify_listener(
        ListenerArn=world.listener,
        DefaultActions=[{"Type": "forward", "ForwardConfig": {"TargetGroups": [
            {"TargetGroupArn": world.blue_tg, "Weight": blue},
            {"TargetGroupArn": world.green_tg, "Weight": green}]}}],
    )

"""docs/benchmarks.md is written by several measurements (bench/run.py, bench/fleet.py) and holds
sections measured by hand (the comparison check, the build and test times): each script
replaces only its own block, between its markers, and keeps the rest as it is."""
from pathlib import Path

REPORT = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"


def markers(name):
    return f"<!-- {name}: begin -->", f"<!-- {name}: end -->"


def write_block(name, lines, path=REPORT, first=False):
    """Replaces the block `name` in `path` with `lines` (markers included); a report without it
    gets it at its start (`first`) or end."""
    begin, end = markers(name)
    block = "\n".join([begin, *lines, end])
    text = path.read_text() if path.exists() else ""
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + block + rest.split(end, 1)[1]
    elif first:
        text = block + "\n\n" + text.lstrip("\n")
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)

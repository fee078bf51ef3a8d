"""A function's package size as `sam deploy` uploads it: `bootstrap` zipped with deflate at the
default level.

    python -m bench.package_size [--at-most BYTES] [--unzip-runs N] BOOTSTRAP...

prints each bootstrap's size and zipped size (and with `--unzip-runs`, the median time to unzip
it); with `--at-most`, exits 1 naming every package over it (CI holds the functions to
docs/size-and-startup.md's 3.5 MB ratchet this way)."""
import argparse
import io
import statistics
import sys
import tempfile
import time
import zipfile
from pathlib import Path


def zipped(bootstrap):
    """The package's bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.write(bootstrap, "bootstrap")
    return buffer.getvalue()


def zipped_size(bootstrap):
    return len(zipped(bootstrap))


def unzip_ms(package, runs):
    """The median time to inflate the package's `bootstrap` into a fresh file, as a cold start
    unpacks the code before it runs it (page cache warm: the part of a cold start the size
    decides, on this machine)."""
    times = []
    with tempfile.TemporaryDirectory() as scratch:
        for run in range(runs):
            started = time.perf_counter()
            with zipfile.ZipFile(io.BytesIO(package)) as archive:
                archive.extract("bootstrap", Path(scratch) / str(run))
            times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--at-most", type=int, help="the largest zipped size allowed, in bytes")
    parser.add_argument("--unzip-runs", type=int, default=0,
                        help="also the median time to unzip each package over this many runs")
    parser.add_argument("bootstraps", nargs="+", type=Path)
    args = parser.parse_args()
    over = []
    for bootstrap in args.bootstraps:
        package = zipped(bootstrap)
        zipped_bytes = len(package)
        unzip = f", unzipped in {unzip_ms(package, args.unzip_runs):.1f} ms" if args.unzip_runs else ""
        print(f"{bootstrap}: {bootstrap.stat().st_size / 1e6:.2f} MB, zipped {zipped_bytes / 1e6:.2f} MB{unzip}")
        if args.at_most is not None and zipped_bytes > args.at_most:
            over.append(f"{bootstrap} ({zipped_bytes} bytes)")
    if over:
        print(f"over {args.at_most} bytes zipped: {', '.join(over)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()

"""A function's package size as `sam deploy` uploads it: `bootstrap` zipped with deflate at the
default level.

    python -m bench.package_size [--at-most BYTES] BOOTSTRAP...

prints each bootstrap's size and zipped size; with `--at-most`, exits 1 naming every package
over it (CI holds the functions to docs/size-and-startup.md's 3 MB goal this way)."""
import argparse
import io
import sys
import zipfile
from pathlib import Path


def zipped_size(bootstrap):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.write(bootstrap, "bootstrap")
    return len(buffer.getvalue())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--at-most", type=int, help="the largest zipped size allowed, in bytes")
    parser.add_argument("bootstraps", nargs="+", type=Path)
    args = parser.parse_args()
    over = []
    for bootstrap in args.bootstraps:
        zipped = zipped_size(bootstrap)
        print(f"{bootstrap}: {bootstrap.stat().st_size / 1e6:.2f} MB, zipped {zipped / 1e6:.2f} MB")
        if args.at_most is not None and zipped > args.at_most:
            over.append(f"{bootstrap} ({zipped} bytes)")
    if over:
        print(f"over {args.at_most} bytes zipped: {', '.join(over)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()

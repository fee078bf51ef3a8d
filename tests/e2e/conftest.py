import sys
from pathlib import Path

# `import sandbox` from the repository root.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

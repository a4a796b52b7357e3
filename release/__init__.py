"""edgert's release pipeline: build, repair and verify native wheels."""

import sys as _sys

__version__ = "0.1.0"

# The build backend runs under whichever interpreter pip builds for; below 3.9 (the project's
# Requires-Python) the pipeline cannot run, and this says so instead of a random SyntaxError.
if _sys.version_info < (3, 9):  # noqa: UP036 (the check is for interpreters below the target)
    raise RuntimeError(f"edgert's build backend needs Python >= 3.9, this is "
                       f"{_sys.version.split()[0]} (fix: build with Python 3.9 or newer)")

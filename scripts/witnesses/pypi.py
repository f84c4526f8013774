"""pypi.py — the witnesses' one way to get a pinned PyPI package: import it, or install it with pip and import
it, or end the process loudly. A witness that cannot be had never lets a check pass by its absence.

    from pypi import require
    ssimulacra2 = require("ssimulacra2", "ssimulacra2==0.3.0", who="ssimulacra2 witness")
"""
import importlib
import subprocess
import sys


def require(module, requirement, who="witness"):
    """The imported `module`; installs `requirement` (a pip requirement) first when it is missing, and exits
    with a message naming `who` when pip cannot install it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        print("%s: installing %s with pip" % (who, requirement), file=sys.stderr)
        result = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", requirement])
        if result.returncode != 0:
            sys.exit("%s: cannot install %s (pip exit %d)" % (who, requirement, result.returncode))
        importlib.invalidate_caches()
        return importlib.import_module(module)

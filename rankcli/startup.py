"""Kept at this path while the package moves, for code written against it: the module is
:mod:`rankcli.runtime.startup`."""
import sys

from rankcli.runtime import startup

sys.modules[__name__] = startup

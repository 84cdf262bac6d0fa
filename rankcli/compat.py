"""Kept at this path while the package moves, for code written against it: the module is
:mod:`rankcli.runtime.compat`."""
import sys

from rankcli.runtime import compat

sys.modules[__name__] = compat

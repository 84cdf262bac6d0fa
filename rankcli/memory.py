"""Kept at this path while the package moves, for code written against it: the module is
:mod:`rankcli.runtime.memory`."""
import sys

from rankcli.runtime import memory

sys.modules[__name__] = memory

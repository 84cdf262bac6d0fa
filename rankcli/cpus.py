"""Kept at this path while the package moves, for code written against it: the module is
:mod:`rankcli.runtime.cpus`."""
import sys

from rankcli.runtime import cpus

sys.modules[__name__] = cpus

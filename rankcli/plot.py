"""Kept at this path while the package moves, for code written against it: the module is
:mod:`rankcli.display.plot`."""
import sys

from rankcli.display import plot

sys.modules[__name__] = plot

"""Kept at this path while the package moves, for code written against it: the module is
:mod:`rankcli.dataset.pooling`."""
import sys

from rankcli.dataset import pooling

sys.modules[__name__] = pooling

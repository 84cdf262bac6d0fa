"""Kept at this path while the package moves, for code written against it: the module is
:mod:`rankcli.train.scoring`."""
import sys

from rankcli.train import scoring

sys.modules[__name__] = scoring

"""Kept at this path while the package moves, for code written against it: the module is
:mod:`rankcli.dataset.feature_transform`."""
import sys

from rankcli.dataset import feature_transform

sys.modules[__name__] = feature_transform

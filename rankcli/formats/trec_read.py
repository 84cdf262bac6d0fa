"""Kept at this path, which docs/python-api.md shows, for code written against it: the module is
:mod:`rankcli.formats.trec.parse`."""
import sys

from rankcli.formats.trec import parse

sys.modules[__name__] = parse

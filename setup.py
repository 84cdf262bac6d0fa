"""The one compiled module, ``rankcli.formats.trec_native``: the fast path of reading a TREC run with its qrels
(``rankcli/formats/trec_fast.py``). It is optional: where it cannot be built (no C compiler), the install goes on
without it and rankcli reads TREC files with its numpy path, which gives the same results, only slower."""

import os

from setuptools import Extension, setup

# POSIX threads and gcc/clang's flags; MSVC takes neither (the module then runs on one thread).
POSIX = os.name == "posix"

setup(ext_modules=[Extension("rankcli.formats.trec_native", ["rankcli/formats/trec_native.c"], optional=True,
                             extra_compile_args=["-O2", "-pthread"] if POSIX else [],
                             extra_link_args=["-pthread"] if POSIX else [])])

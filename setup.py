"""The one compiled module, ``rankcli.formats.trec_native`` (``rankcli/formats/csrc/``): the fast path of reading a TREC
run with its qrels (``rankcli/formats/trec/join_native.py``). It is optional: where it cannot be built (no C compiler),
the install goes on without it and rankcli reads TREC files with its numpy path, which gives the same results, only
slower."""

import os

from setuptools import Extension, setup

# POSIX threads and gcc/clang's flags (only PyInit_trec_native is exported); MSVC takes neither (the module then runs
# on one thread).
POSIX = os.name == "posix"
CSRC = "rankcli/formats/csrc"

setup(ext_modules=[Extension("rankcli.formats.trec_native", [f"{CSRC}/module.c", f"{CSRC}/read.c", f"{CSRC}/join.c"],
                             depends=[f"{CSRC}/trec_native.h"], optional=True,
                             extra_compile_args=["-O2", "-pthread", "-fvisibility=hidden"] if POSIX else [],
                             extra_link_args=["-pthread"] if POSIX else [])])

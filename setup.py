"""The compiled modules, both optional: where they cannot be built (no C compiler), the install goes on without them
and rankcli takes its other path, which gives the same results, only slower.

- ``rankcli.formats.trec_native`` (``rankcli/formats/csrc/``): the fast path of reading a TREC run with its qrels
  (``rankcli/formats/trec/join_native.py``); without it, the numpy path.
- ``rankcli.core.trees.leaf_walk`` (``rankcli/core/trees/csrc/``): the leaf each row reaches in each tree of a
  LightGBM model (``rankcli/core/trees/leaves.py``); without it, LightGBM's own ``pred_leaf``."""

import os

from setuptools import Extension, setup

# POSIX threads and gcc/clang's flags (only the PyInit_ functions are exported); MSVC takes neither (the modules then
# run on one thread).
POSIX = os.name == "posix"
CFLAGS = ["-O2", "-pthread", "-fvisibility=hidden"] if POSIX else []
LDFLAGS = ["-pthread"] if POSIX else []
CSRC = "rankcli/formats/csrc"
TREES = "rankcli/core/trees/csrc"

setup(ext_modules=[Extension("rankcli.formats.trec_native", [f"{CSRC}/module.c", f"{CSRC}/read.c", f"{CSRC}/join.c"],
                             depends=[f"{CSRC}/trec_native.h"], optional=True, extra_compile_args=CFLAGS,
                             extra_link_args=LDFLAGS),
                   Extension("rankcli.core.trees.leaf_walk", [f"{TREES}/leaf_walk.c"], optional=True,
                             extra_compile_args=CFLAGS, extra_link_args=LDFLAGS)])

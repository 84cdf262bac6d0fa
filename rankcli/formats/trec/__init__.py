"""TREC files (runs, qrels, preferences), one module per stage, each serving the commands its docstring names.

``rankcli eval --qrels/--run``, ``compare --qrels`` (and fuse's and click-model's TREC input, through
:mod:`.parse`) read a run with its qrels in three stages:

- :mod:`.text`: both files' bytes, read once and checked as text;
- :mod:`.join`: each run line matched with its judgment, by the C variant (:mod:`.join_native`, the compiled
  ``rankcli.formats.trec_native``) or the numpy one (:mod:`.parse`'s columns, then a hash join);
- :mod:`.rank`: each query's rows in rank order, ``-M`` and ``-J`` applied, as the run the measures take.

``rankcli trec_eval`` reads its files as trec_eval 10.0 reads them: :mod:`.trec_eval_parse` (its parsing), on the
bytes of :mod:`.file_bytes` (gzip, standard input, NUL and line-length rules, which :mod:`.text` shares); its join
is :mod:`rankcli.core.trec_eval.join`. Both pipelines drop whitespace-only lines as blocks arrive (:mod:`.blank`).

What rankcli writes in TREC's layouts (``export --format trec-qrels``, ``predict --format trec``, ``eval --format
trec_eval``) is :mod:`.write`.

No module here is imported by this package's ``__init__``: :mod:`.blank` and :mod:`.file_bytes` stay free of numpy,
so that ``rankcli trec_eval`` reads its files on a thread while the process imports numpy.
"""

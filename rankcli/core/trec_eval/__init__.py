"""trec_eval 10.0's measures, computed as trec_eval computes them, for ``rankcli trec_eval``.

Every query's ranking is trec_eval's ``RES_RELS`` (``form_res_rels.c``): the retrieved documents in trec_eval's order
(similarity descending, ties by document id descending in byte order), each carrying its qrels label, ``-1`` when the
document is not in the qrels (``RELVALUE_NONPOOL``) or ``-2`` when its label is negative (``RELVALUE_UNJUDGED``). The
queries of a block are rows of padded matrices (:class:`~rankcli.core.trec_eval.chunk.Chunk`); every sum a measure
takes runs along a row in rank order, so that each value is the double trec_eval's loop computes, bit for bit, and
the summary is the running sum trec_eval accumulates, query after query.

Twins: ``rankcli eval`` and ``compare --qrels`` compute the measures they share with this package in
:mod:`rankcli.core.metrics` (ndcg, map, P, recall, recip_rank) and :mod:`rankcli.core.metrics.trec_eval_measures`
(the others), under eval's conventions and at its speed; this package keeps trec_eval's order of operations, bit for
bit. ``tests/evaluate/test_measure_twins.py`` checks the two equal per query.

- :mod:`.join`: runs and qrels (integer codes) -> the ranked judgments of the evaluated queries;
- :mod:`.chunk`: a block of queries as padded matrices;
- :mod:`.simple`, :mod:`.cutoffs`, :mod:`.interp`, :mod:`.gains`: the measures (each function names its
  ``m_<name>.c``);
- :mod:`.registry`: one record per trec_eval measure (its kind, defaults, kernel, file), the measure sets, and the
  parsing of ``-m``.
"""

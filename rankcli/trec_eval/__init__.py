"""``rankcli trec_eval``: trec_eval's command line and output, computed by :mod:`rankcli.core.trec_eval`.

- :mod:`.getopt`: the command line as trec_eval's ``getopt_long`` reads it;
- :mod:`.measures`: the measures ``-m`` asks for, with their parameters and value names;
- :mod:`.pipeline`: read, join, rank, measure, write (streamed);
- :mod:`.render`: trec_eval's lines, byte for byte.
"""

"""trec_eval's own command line, computed by rankcli: rankcli trec_eval [flags] QRELS RUN.

The flags, the measures and the output are trec_eval 10.0's, byte for byte, so that `alias trec_eval='rankcli
trec_eval'` keeps a script working: -q -c -n -J -o -l N -M N -N N -D N -R qrels -T trec_results -m measure[.params]
(repeatable; sets official, all_trec, set), clustered (-qc) or attached (-l2, -mP.5,10), long forms (--measure ...),
options after the files. RUN may be - (standard input) and either file gzipped. -h prints trec_eval's help, -v its
version. Exit statuses are rankcli's: 2 for a usage error, 3 for bad input.

Reference: docs/commands/trec_eval.md; the differences from trec_eval: docs/trec_eval.md.
"""

from __future__ import annotations

import sys

import typer

from rankcli.errors import UsageError

NAME = "trec_eval"
SHORT_HELP = "trec_eval's command line and output (alias trec-eval)."
#: typer passes every word through (-h and --help too): trec_eval's getopt reads them.
CONTEXT_SETTINGS = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}
ADD_HELP_OPTION = False


def _words(ctx: typer.Context) -> list[str]:
    """The words after the command's name as the user gave them: click drops a "--" from ``ctx.args``, where
    trec_eval's getopt reads it as the end of the options (``-m map -- -q run``: a qrels file named -q)."""
    given = (ctx.obj or {}).get("argv") if isinstance(ctx.obj, dict) else None
    if given and given[0] == ctx.info_name:
        return list(given[1:])
    return list(ctx.args)


def command(ctx: typer.Context) -> None:
    from rankcli.trec_eval import getopt

    try:
        options = getopt.parse(_words(ctx))
    except UsageError as exc:  # the command's own name in the hint (trec_eval or trec-eval)
        raise UsageError(f"{exc} Try 'rankcli {ctx.info_name} --help'.") from None
    if options.version:
        from rankcli.trec_eval.help import version_text

        sys.stderr.write(version_text())
        return
    out = typer.get_binary_stream("stdout")
    if options.help:
        from rankcli.trec_eval.help import help_text

        out.write(help_text(options).encode())
        out.flush()
        return
    from rankcli.trec_eval.reading import Reading

    reading = Reading(options)  # the files are read while numpy and the measures are imported
    from rankcli.runtime.startup import import_numpy_single_threaded_blas

    import_numpy_single_threaded_blas()  # no linear algebra here: OpenBLAS's idle threads would spin on a core
    from rankcli.trec_eval.pipeline import evaluate

    for block in evaluate(options, reading):
        out.write(block)
    out.flush()

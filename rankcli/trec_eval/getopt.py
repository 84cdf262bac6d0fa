"""trec_eval's command line, read as its ``getopt_long`` (GNU, with argument permutation) reads it.

``getopt_long(argc, argv, "hvqm:cl:nD:JN:M:R:T:oZ:", long_options)``: short options cluster (``-qc``), an option's
value may be attached (``-l2``, ``-mP.5``) or the next word, options may follow the file arguments, ``--`` ends the
options, ``-`` is a file argument (standard input); a long option may be abbreviated to any unambiguous prefix
(``--meas``) and takes its value after ``=`` or as the next word. Numbers are read as C's ``atol`` reads them
(``-l 1.5`` is 1, ``-M x`` is 0). Options take effect in order, as trec_eval's ``main`` acts on each one getopt
returns: ``-v`` prints the version and exits, so that nothing after it is read (``-v -x`` is the version), while a
measure ``-m`` named before it is checked first (``-m bogus -v`` is an error).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rankcli.core.trec_eval.registry import Selection, mark
from rankcli.errors import UsageError

SHORT = "hvqm:cl:nD:JN:M:R:T:oZ:"
#: long name -> (short letter, takes a value)
LONG = {
    "help": ("h", False), "version": ("v", False), "query_eval_wanted": ("q", False), "measure": ("m", True),
    "complete_rel_info_wanted": ("c", False), "level_for_rel": ("l", True), "nosummary": ("n", False),
    "Debug_level": ("D", True), "Judged_docs_only": ("J", False), "Number_docs_in_coll": ("N", True),
    "Max_retrieved_per_topic": ("M", True), "Rel_info_format": ("R", True), "Results_format": ("T", True),
    "Output_old_results_format": ("o", True), "Zscore": ("Z", True),
}
#: trec_eval's ``MAXLONG`` (common.h): the default -M.
MAXLONG = 2147483647

USAGE = ("Usage: trec_eval [-h] [-q] {-m measure}* trec_rel_file trec_top_file\n"
         "   -h: Give full help information, including other options\n"
         "   -q: In addition to summary evaluation, give evaluation for each query\n"
         "   -m: calculate and print measures indicated by 'measure'\n"
         "       ('-m all_qrels' prints all qrels measures, '-m official' is default)\n")


#: How a usage error ends (rankcli's usage errors are one line with this hint; trec_eval prints USAGE).
HINT = "usage: rankcli trec_eval [-h] [-q] {-m measure}* trec_rel_file trec_top_file."


def _takes_value(letter: str) -> bool:
    i = SHORT.find(letter)
    return i >= 0 and SHORT[i + 1:i + 2] == ":"


@dataclass
class Options:
    """The parsed command line (trec_eval's ``EPI``)."""

    query: bool = False
    complete: bool = False
    judged_only: bool = False
    summary: bool = True
    help: bool = False
    version: bool = False
    level: int = 1
    max_docs: int = MAXLONG
    num_docs: int = 0
    debug_level: int = 0
    debug_query: str | None = None
    rel_format: str = "qrels"
    results_format: str = "trec_results"
    zscores: str | None = None
    measures: list = field(default_factory=list)
    files: list = field(default_factory=list)


def atol(text: str) -> int:
    """C's ``atol``: leading blanks, a sign and digits; 0 when there are none; saturated to a 64-bit long."""
    m = re.match(r"[ \t\n\v\f\r]*([+-]?[0-9]+)", text)
    if not m:
        return 0
    return min(max(int(m.group(1)), -(1 << 63)), (1 << 63) - 1)


def _long(args: list[str], i: int, out: list) -> int:
    """Parse ``args[i]`` (``--name[=value]``) into ``out``; returns the index of the next word."""
    body = args[i][2:]
    name, eq, value = body.partition("=")
    if name in LONG:
        matches = [name]
    else:
        matches = [n for n in LONG if n.startswith(name)]
        if len({LONG[n] for n in matches}) > 1:
            raise UsageError(f"option '--{name}' is ambiguous; possibilities: "
                             + " ".join(f"'--{n}'" for n in matches))
    if not matches:
        raise UsageError(f"unrecognized option '--{name}'; {HINT}")
    letter, needs = LONG[matches[0]]
    if not needs:
        if eq:
            raise UsageError(f"option '--{matches[0]}' doesn't allow an argument")
        out.append((letter, None))
        return len(args) if letter == "v" else i + 1  # nothing after --version is read
    if eq:
        out.append((letter, value))
        return i + 1
    if i + 1 >= len(args):
        raise UsageError(f"option '--{matches[0]}' requires an argument")
    out.append((letter, args[i + 1]))
    return i + 2


def _short(args: list[str], i: int, out: list) -> int:
    word = args[i]
    j = 1
    while j < len(word):
        letter = word[j]
        if letter == ":" or letter not in SHORT:
            raise UsageError(f"invalid option -- '{letter}'; {HINT}")
        if not _takes_value(letter):
            out.append((letter, None))
            if letter == "v":
                return len(args)  # trec_eval prints its version and exits: nothing after -v is read
            j += 1
            continue
        if j + 1 < len(word):
            out.append((letter, word[j + 1:]))
            return i + 1
        if i + 1 >= len(args):
            raise UsageError(f"option requires an argument -- '{letter}'")
        out.append((letter, args[i + 1]))
        return i + 2
    return i + 1


def split(args: list[str]) -> tuple[list, list[str]]:
    """The options (``(letter, value)`` in order) and the other words, as GNU getopt_long permutes them."""
    options: list = []
    words: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            words += args[i + 1:]
            break
        if word.startswith("--"):
            i = _long(args, i, options)
        elif word.startswith("-") and word != "-":
            i = _short(args, i, options)
        else:
            words.append(word)
            i += 1
    return options, words


def parse(args: list[str]) -> Options:
    """Options as trec_eval's ``main`` sets them (see the module docstring)."""
    pairs, words = split(args)
    o = Options(files=words)
    for letter, value in pairs:
        if letter == "h":
            o.help = True
        elif letter == "v":
            for earlier in o.measures:  # trec_eval marks each -m as it meets it: an illegal one exits first
                mark(Selection(set(), []), earlier)
            o.version = True
            break  # trec_eval prints its version and exits at once
        elif letter == "q":
            o.query = True
        elif letter == "m":
            o.measures.append(value)
        elif letter == "c":
            o.complete = True
        elif letter == "l":
            o.level = atol(value)
        elif letter == "n":
            o.summary = False
        elif letter == "D":
            level, _, query = value.partition(".")
            o.debug_level, o.debug_query = atol(level), (query if _ else None)
        elif letter == "J":
            o.judged_only = True
        elif letter == "N":
            o.num_docs = atol(value)
        elif letter == "M":
            o.max_docs = atol(value)
        elif letter == "R":
            o.rel_format = value
        elif letter == "T":
            o.results_format = value
        elif letter == "Z":
            o.zscores = value
    if not (o.help or o.version) and len(o.files) != 2:
        raise UsageError(f"expected 2 file arguments (qrels, run), got {len(o.files)}; {HINT}")
    return o

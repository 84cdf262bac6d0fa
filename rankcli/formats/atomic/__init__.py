"""Atomic outputs: write to a temporary beside the target, rename into place only on success.

The rules every command follows (docs/reliability.md is the user's version):

- A failure, an exception, Ctrl-C, SIGTERM or SIGHUP never leaves a half-written file at the target path; the
  temporary is removed. A temporary's name says who owns it (``.<name>+<host>+<pid>+<random>.tmp``): after a SIGKILL,
  a later run writing the same target removes it, but only when its owner is provably gone (same host and process
  namespace, process not alive), never one of a concurrent run.
- The temporary is fsynced before the rename and the directory after it, so a crash or power loss never leaves a
  truncated file under the final name.
- Files are created ``0666 & ~umask`` and directories ``0777 & ~umask``, as any other Unix tool's.
- ``--overwrite`` replaces a file that is empty or an output of the same kind (:mod:`~rankcli.formats.atomic.kinds`),
  or a directory that is empty or holds exactly a previous rankcli output of the same kind (recognised by rankcli's
  own files: ``rankcli.json`` of a model, the ``.rankcli-output.json`` marker of a converted directory); any other
  file or directory is refused whatever the flags. An output that is, or contains, one of the command's inputs is a
  usage error before any work (:func:`check_not_input`).
- A symlinked output is written through to its target (the link stays a link); a target that is a device, a FIFO or
  another special file is refused. ``-`` is standard output (:data:`STDOUT`): the output is built in a temporary file
  and copied to standard output once complete.

The modules: :mod:`~rankcli.formats.atomic.temporaries` (temporaries, their owners, modes, fsync),
:mod:`~rankcli.formats.atomic.targets` (checking a target, recognising rankcli's outputs),
:mod:`~rankcli.formats.atomic.kinds` (the kind of a one-file output),
:mod:`~rankcli.formats.atomic.writes` (the atomic writes and the final-output record),
:mod:`~rankcli.formats.atomic.lock` (:class:`FileLock`),
:mod:`~rankcli.formats.atomic.owned` (removing an earlier run's files from a directory rankcli reopens, and only those).
"""

from rankcli.formats.atomic.lock import FileLock
from rankcli.formats.atomic.owned import Layout, foreign_entries, remove_owned
from rankcli.formats.atomic.targets import (
    MARKER,
    STDOUT,
    check_distinct,
    check_not_input,
    check_stdout,
    check_target,
    directory_kind,
    is_experiment_config,
    model_files,
    output_path,
    resolve_target,
)
from rankcli.formats.atomic.temporaries import owner_token, temporary_name
from rankcli.formats.atomic.writes import (
    atomic_directory,
    atomic_path,
    expect_final_output,
    final_output_written,
)

__all__ = ["MARKER", "STDOUT", "FileLock", "Layout", "atomic_directory", "atomic_path", "check_distinct",
           "check_not_input", "check_stdout", "check_target", "directory_kind", "expect_final_output",
           "final_output_written", "foreign_entries", "is_experiment_config", "model_files", "output_path",
           "owner_token", "remove_owned", "resolve_target", "temporary_name"]

"""A checkpoint run on another landing folder than the one it read: refused before Spark starts.

Spark's file source knows a file by its full path. Run on another folder (the same files copied
there, a link to the old one, the folder moved and its spec updated), a checkpoint reads every file
it finds there again, whatever it read before under the old path: a job's rows counted twice,
exit 0. Where the last batch read files, Spark fails instead when it starts, with "Wrong basePath"
and nothing else. So a run whose landing folder (per input kind) differs from the one the
checkpoint last read (the binding's record, :func:`spark_jobs.contract.binding.record_inputs`) is
refused while the checkpoint's source logs hold files of that old folder. A folder it never read
a file from (an empty one, a typo) may change freely; Kafka inputs have checks of their own
(:mod:`spark_jobs.kafka.ids`). Files only, no Spark.
"""

from __future__ import annotations

from dataclasses import dataclass

from spark_jobs.checkpoints.layout import Layout
from spark_jobs.checkpoints.unread import file_key, files_read
from spark_jobs.contract.errors import ExitCode, UserError
from spark_jobs.contract.kafka import is_kafka


@dataclass(frozen=True)
class MovedInput:
    kind: str
    read_from: str  # the folder the checkpoint read
    now: str  # the folder this run was given
    files: int  # how many files of ``read_from`` the checkpoint's source logs name


def moved_inputs(
    lay: Layout, bound: dict[str, str] | None, inputs: dict[str, str]
) -> list[MovedInput]:
    """The input kinds whose folder differs from ``bound`` (what the checkpoint last read) and
    whose old folder the checkpoint read files of; [] when the binding records none."""
    changed = {
        kind: (old, inputs[kind])
        for kind, old in (bound or {}).items()
        if kind in inputs
        and file_key(old).rstrip("/") != file_key(inputs[kind]).rstrip("/")  # as Spark spells it
        and not is_kafka(old)
        and not is_kafka(inputs[kind])
    }
    if not changed:
        return []
    read = files_read(lay).files
    out = []
    for kind, (old, now) in sorted(changed.items()):
        under = file_key(old).rstrip("/") + "/"
        files = sum(1 for f in read if f.startswith(under))
        if files:
            out.append(MovedInput(kind, old, now, files))
    return out


def refuse_moved_inputs(
    checkpoint: str, lay: Layout, bound: dict[str, str] | None, inputs: dict[str, str]
) -> None:
    """Refuse (exit 4, nothing written) a run on another folder than the checkpoint read."""
    moved = moved_inputs(lay, bound, inputs)
    if not moved:
        return
    m = moved[0]
    raise UserError(
        f"checkpoint {checkpoint} read {m.files} file(s) of landing folder {m.read_from} "
        f"({m.kind}); this run's is {m.now}: Spark knows a file by its path, so a file it read "
        "would be read there again and its rows counted twice. Land new files in "
        f"{m.read_from}; to move that folder, keep its path (make it a link to the new place)",
        exit_code=ExitCode.UNSAFE,
    )

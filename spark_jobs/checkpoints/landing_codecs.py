"""Compressed landing files Spark does not decompress, said before a run reads them.

Spark's file source picks a Hadoop codec by a file's last extension: ``.json.gz``, ``.json.bz2``
and ``.json.zst`` from the usual tools are read. Two other cases read wrong, and no error says so:

- a format no codec decodes (``.json.xz``, ``.json.zip``, :data:`NOT_DECODED`) is read as text:
  its bytes go to quarantine line by line, as not UTF-8 or not JSON;
- ``.lz4`` and ``.snappy`` are decoded in Hadoop's own block framing only (what Spark and Hadoop
  write). What the ``lz4`` tool or a snappy library writes (an LZ4 frame, Snappy's framing format,
  a raw Snappy block) Spark 4.2 reads as no lines at all: nothing reaches the quarantine, and the
  file's name counts as read from then on. (Or its JVM dies allocating a buffer of the length the
  first bytes seem to name: the test suite's did.) So a run refuses such a file before Spark
  reads it.

Local landing folders only (a store's files are not opened here).
"""

from __future__ import annotations

import os

from spark_jobs.checkpoints.layout import Layout
from spark_jobs.checkpoints.unread import file_key, files_read, shown
from spark_jobs.contract import paths
from spark_jobs.contract.errors import UserError

NOT_DECODED = (".xz", ".lzma", ".zip", ".7z", ".rar", ".br", ".lzo", ".tar", ".tgz")
# Hadoop's block framing starts each block with its length, 4 bytes big-endian, under 16 MiB
# (the codecs' buffers are 256 KiB): a first byte of 0. An LZ4 frame starts 04 22 4D 18, Snappy's
# framing format ff 06, a raw Snappy block with its length as a varint: never 0 when not empty.
HADOOP_FRAMED = (".lz4", ".snappy")
LAND_AGAIN = "uncompressed or as .json.gz, .json.bz2 or .json.zst"


def _landing_files(uri: str, suffixes: tuple[str, ...]) -> list[os.DirEntry[str]]:
    local = paths.local_path(uri)
    if local is None or not local.is_dir():
        return []
    with os.scandir(local) as entries:
        return [
            e
            for e in entries
            if paths.landing_file(e.name) and e.name.lower().endswith(suffixes) and e.is_file()
        ]


def read_as_text(uri: str) -> list[str]:
    """The files of a local landing folder that the file source reads though it cannot
    decompress them (named ``LANDING_GLOB``, ending in one of :data:`NOT_DECODED`); sorted."""
    return sorted(e.name for e in _landing_files(uri, NOT_DECODED))


def read_as_text_line(uri: str, job: str) -> str | None:
    """The run's one warning line for :func:`read_as_text` (None: nothing to say)."""
    names = read_as_text(uri)
    if not names:
        return None
    return (
        f"statekeeper: job {job} reads {len(names)} file(s) of landing folder {uri} as plain "
        f"text, compressed in a format Spark does not decompress: {shown(names)} (their lines go to "
        f"quarantine as not UTF-8 or not JSON); land them {LAND_AGAIN} under new names"
    )


def _hadoop_framed(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(1) in (b"", b"\0")
    except FileNotFoundError:  # moved away since the folder was listed: nothing to read
        return True


def read_as_nothing(uri: str) -> list[str]:
    """The ``.lz4`` and ``.snappy`` files of a local landing folder that are not in Hadoop's
    block framing, which Spark reads as no lines (see the module's docstring); sorted names."""
    return sorted(e.name for e in _landing_files(uri, HADOOP_FRAMED) if not _hadoop_framed(e.path))


def split_read_as_nothing(uri: str, lay: Layout) -> tuple[list[str], list[str]]:
    """The names of :func:`read_as_nothing`: those a batch of ``lay`` already read (as no
    lines), and those still waiting to be read."""
    names = read_as_nothing(uri)
    local = paths.local_path(uri)
    if not names or local is None:
        return [], names
    done = files_read(lay).files
    read = [n for n in names if file_key(str(local / n)) in done]
    return read, [n for n in names if n not in read]


WHY = (
    "not in Hadoop's block framing, the only one Spark's lz4 and snappy codecs decode "
    "(an LZ4 frame or a Snappy stream from the usual tools): Spark reads such a file as no lines"
)


def refuse_read_as_nothing(uri: str, job: str, lay: Layout) -> str | None:
    """Before Spark starts: a UserError naming the files of :func:`read_as_nothing` that no
    batch read yet (nothing of them is lost: move them out and land their lines again); the
    warning line for those an earlier batch already read as nothing; None when there are none."""
    read, waiting = split_read_as_nothing(uri, lay)
    if waiting:
        raise UserError(
            f"job {job}: landing folder {uri} holds {len(waiting)} file(s) {WHY}: "
            f"{shown(waiting)}; nothing was read; move them out of the folder and land their "
            f"lines {LAND_AGAIN}"
        )
    if not read:
        return None
    return (
        f"statekeeper: job {job}: earlier batches read {len(read)} file(s) of landing folder "
        f"{uri} {WHY}: {shown(read)}; land their lines again {LAND_AGAIN} under new names"
    )


def describe(uri: str, read: list[str], waiting: list[str]) -> str:
    """``checkpoint validate``'s message (``LANDING_FILES_READ_AS_NOTHING``)."""
    said = [f"read by a batch: {shown(read)}"] if read else []
    said += [f"not read yet: {shown(waiting)}"] if waiting else []
    return f"{len(read) + len(waiting)} file(s) of landing folder {uri} {WHY} ({'; '.join(said)})"

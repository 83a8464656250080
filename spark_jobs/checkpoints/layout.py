"""Spark's checkpoint layout, read from files with fsspec (a local path or any object-store URL).

What Spark 4.2 writes (checked against real queries, both state store providers)::

    metadata                      {"id": "<query id>"}
    offsets/N                     v1 / {"batchWatermarkMs", "batchTimestampMs", "conf": {...}} / one line per source
                                  (a file source {"logOffset": N}; Kafka {"topic": {"0": 123, ...}}, the
                                  next offset to read per partition, i.e. processed up to here)
    commits/N                     v1 / {"nextBatchWatermarkMs": ...}
    sources/<i>/N[.compact]       the file source's log of files seen
    state/<op>/_metadata/metadata operator name and state store partitions (v1; transformWithState
                                  writes v2 instead: _metadata/v2/<batch>, one per batch that changed it)
    state/<op>/<part>/[<store>/]  HDFS-backed: V.delta, V.snapshot; RocksDB: V.changelog, V.zip, SSTs/*.sst
    .<name>.<uuid>.tmp            a write Spark started and never finished (a leftover)
    _statekeeper/                 Statekeeper's own files (progress, lock, job.json, quarantine query)

Batch ``N`` reads state version ``N`` and commits version ``N + 1``; restarting after committed
batch ``N`` therefore needs version ``N + 1`` of every state store partition.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from spark_jobs.checkpoints.files import FileInfo, list_files, parse_log_file, read_text, stat_file
from spark_jobs.contract import paths

STATEKEEPER_DIR = paths.STATEKEEPER_DIR
SOURCES_DIR = "sources"  # the file sources' logs, ``sources/<i>/<batch>``
# V.delta, V.snapshot, V.changelog, V.zip, and checkpoint format v2's V_<uuid>.zip/.changelog
_VERSION_FILE = re.compile(r"^(\d+)(?:_[0-9a-fA-F-]+)?\.(delta|snapshot|changelog|zip)$")
_BATCH_FILE = re.compile(r"^(\d+)$")
# The same names as moved or copied, with Hadoop's hidden ``.<name>.crc`` beside them.
BATCH_NAME = re.compile(r"^\.?(\d+)(\.crc)?$")
SOURCE_LOG_NAME = re.compile(r"^\.?(\d+)(\.compact)?(\.crc)?$")
STATE_VERSION_NAME = re.compile(
    r"^\.?(\d+)(?:_[0-9a-fA-F-]+)?\.(delta|snapshot|changelog|zip)(\.crc)?$"
)


@dataclass
class StoreFiles:
    """One state store instance: operator, partition and (for joins) store name."""

    op: str
    part: str
    store: str
    versions: dict[int, set[str]] = field(default_factory=dict)  # version -> kinds on disk
    bytes_by_kind: dict[str, int] = field(default_factory=dict)
    files: int = 0

    def add(self, kind: str, size: int, version: int | None) -> None:
        self.bytes_by_kind[kind] = self.bytes_by_kind.get(kind, 0) + max(size, 0)
        self.files += 1
        if version is not None:
            self.versions.setdefault(version, set()).add(kind)

    @property
    def provider(self) -> str:
        kinds = set(self.bytes_by_kind)
        if kinds & {"zip", "changelog", "sst"}:
            return "rocksdb"
        if kinds & {"delta", "snapshot"}:
            return "hdfs"
        return "unknown"

    def reachable(self) -> set[int]:
        """Versions that can be rebuilt from the files on disk.

        A version is whole (snapshot/zip) or a diff (delta/changelog) on top of the previous one;
        version 0 is the empty store.
        """
        out: set[int] = set()
        ok_prev = True
        prev = 0
        for v in sorted(self.versions):
            kinds = self.versions[v]
            whole = bool(kinds & {"snapshot", "zip"})
            diff = bool(kinds & {"delta", "changelog"})
            chained = diff and ((v == prev + 1 and ok_prev) or v == 1)
            ok = whole or chained
            if ok:
                out.add(v)
            ok_prev, prev = ok, v
        return out

    @property
    def key(self) -> str:
        return "/".join(p for p in (self.op, self.part, self.store) if p)


@dataclass
class Layout:
    """Everything the toolkit knows about one checkpoint, from one listing and a few reads."""

    uri: str
    exists: bool
    files: dict[str, FileInfo] = field(default_factory=dict)
    query_id: str | None = None
    metadata_error: str | None = None  # None, "missing" or a parse error
    offsets: list[int] = field(default_factory=list)
    commits: list[int] = field(default_factory=list)
    offset_meta: dict[int, dict[str, Any]] = field(default_factory=dict)  # parsed offsets (some)
    # batch -> its sources' end offsets, one parsed JSON value per source line ("-" is None)
    offset_sources: dict[int, list[Any]] = field(default_factory=dict)
    commit_meta: dict[int, dict[str, Any]] = field(default_factory=dict)
    unparsable: dict[str, str] = field(default_factory=dict)  # relative path -> reason
    stores: dict[str, StoreFiles] = field(default_factory=dict)
    operators: dict[str, dict[str, Any]] = field(default_factory=dict)  # op -> metadata
    temp_files: list[str] = field(default_factory=list)
    source_logs: dict[str, dict[str, int]] = field(default_factory=dict)  # source -> files, bytes

    def kafka_offsets(self, batch: int) -> dict[str, dict[str, int]]:
        """Topic -> partition -> end offset of ``batch`` over its Kafka sources ({} for none)."""
        from spark_jobs.contract.lag import kafka_offsets

        out: dict[str, dict[str, int]] = {}
        for src in self.offset_sources.get(batch) or []:
            for topic, parts in (kafka_offsets(src) or {}).items():
                out.setdefault(topic, {}).update(parts)
        return out

    @property
    def last_committed(self) -> int | None:
        return self.commits[-1] if self.commits else None

    @property
    def last_offset(self) -> int | None:
        return self.offsets[-1] if self.offsets else None

    @property
    def uncommitted(self) -> list[int]:
        last = self.last_committed
        return [b for b in self.offsets if last is None or b > last]

    def pinned_conf(self) -> dict[str, str]:
        """The confs Spark pinned in the newest readable offset file."""
        for b in sorted(self.offset_meta, reverse=True):
            conf = self.offset_meta[b].get("conf")
            if isinstance(conf, dict):
                return {str(k): str(v) for k, v in conf.items()}
        return {}

    def total_bytes(self, prefix: str = "") -> int:
        return sum(f.size for p, f in self.files.items() if p.startswith(prefix))

    def data_stores(self) -> list[StoreFiles]:
        """The stores holding state versions (a join's partition folder only holds its stores)."""
        named = {(s.op, s.part) for s in self.stores.values() if s.store}
        return [s for s in self.stores.values() if s.store or (s.op, s.part) not in named]

    def restorable_batches(self) -> list[int]:
        """Committed batches whose state (version batch + 1) every store can still rebuild."""
        offsets = set(self.offsets)
        reach = [s.reachable() for s in self.data_stores()]
        return [b for b in self.commits if b in offsets and all(b + 1 in r for r in reach)]


# -- reading -------------------------------------------------------------------------------


# How many of the newest offset/commit files are parsed in full. Spark itself only reads the
# newest ones on restart; older ones are only listed (and, with sizes, checked for being empty)
# so a checkpoint of thousands of batches still reads in well under a second.
PARSE_TAIL = 256


def read_layout(
    uri: str,
    parse_tail: int = PARSE_TAIL,
    sizes: bool = True,
    listing: dict[str, dict[str, FileInfo]] | None = None,
    read: Callable[[str], str] | None = None,
) -> Layout:
    """List ``uri`` once and parse what the checks need; never writes.

    ``sizes=False`` (validation) skips the per-file stat: byte counts stay 0, except for the
    metadata file and the file-source logs' compact files, which are stat'ed one by one.
    ``listing`` (as ``list_files`` returns it) analyses that subset of the files instead: what
    a snapshot of a live checkpoint copies.
    """
    dirs = listing if listing is not None else list_files(uri, sizes)
    text = read or (lambda rel: read_text(uri, rel))
    if dirs is None:
        return Layout(uri=uri, exists=False)
    files = {f.path: f for folder in dirs.values() for f in folder.values()}
    lay = Layout(uri=uri, exists=True, files=files)
    _sort_listing(lay, dirs)
    _read_metadata(lay, text)
    _parse_logs(lay, text, parse_tail)
    _read_operators(lay, dirs, text)
    return lay


def _sort_listing(lay: Layout, dirs: dict[str, dict[str, FileInfo]]) -> None:
    """Files to what they are: batch logs, source logs, state stores, leftovers."""
    for folder, entries in dirs.items():
        parts = folder.split("/") if folder else []
        if parts and parts[0] == STATEKEEPER_DIR:
            continue
        top = parts[0] if parts else ""
        if top == "state" and "_temporary" not in parts:
            _add_state_folder(lay, parts, entries)
            lay.temp_files += [f.path for n, f in entries.items() if _is_temp(n)]
            continue
        for name, f in entries.items():
            if name.endswith(".crc"):
                continue
            if _is_temp(name) or "_temporary" in parts:
                lay.temp_files.append(f.path)
            elif len(parts) == 1 and top in ("offsets", "commits") and name.isdigit():
                (lay.offsets if top == "offsets" else lay.commits).append(int(name))
                if f.size == 0:
                    lay.unparsable[f.path] = "empty file"
            elif top == SOURCES_DIR and len(parts) == 2:
                _add_source_log_file(lay, parts[1], name, f)
    lay.offsets.sort()
    lay.commits.sort()


def _add_source_log_file(lay: Layout, source: str, name: str, f: FileInfo) -> None:
    s = lay.source_logs.setdefault(source, {"files": 0, "bytes": 0, "compact_bytes": 0})
    s["files"] += 1
    s["bytes"] += max(f.size, 0)
    if name.endswith(".compact"):  # the one size validation needs: stat'ed even without sizes
        size = f.size if f.size >= 0 else (stat_file(lay.uri, f.path) or f).size
        s["compact_bytes"] = max(s["compact_bytes"], size)


def _read_metadata(lay: Layout, text: Callable[[str], str]) -> None:
    """The query id from ``metadata``, or why it cannot be had."""
    files = lay.files
    if "metadata" not in files:
        lay.metadata_error = "missing"
        return
    if files["metadata"].size < 0:
        files["metadata"] = stat_file(lay.uri, "metadata") or files["metadata"]
    try:
        meta = json.loads(text("metadata").splitlines()[0])
        lay.query_id = str(meta["id"])
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        lay.metadata_error = f"unreadable ({type(exc).__name__})"


def _parse_logs(lay: Layout, text: Callable[[str], str], parse_tail: int) -> None:
    """The newest offset and commit files, the oldest offset (where the recovery window starts)
    and the oldest restorable one, parsed; an unparsable one is recorded, not raised."""
    wanted = [("offsets", b) for b in lay.offsets[-parse_tail:]]
    wanted += [("commits", b) for b in lay.commits[-parse_tail:]]
    if lay.offsets:
        wanted.append(("offsets", lay.offsets[0]))
    offset_set = set(lay.offsets)
    restorable_guess = [b for b in lay.commits if b in offset_set]
    if restorable_guess:
        wanted.append(("offsets", restorable_guess[0]))
    for kind, b in dict.fromkeys(wanted):
        rel = f"{kind}/{b}"
        if rel in lay.unparsable:
            continue
        try:
            _version, meta, rest = parse_log_file(text(rel))
        except FileNotFoundError:
            # Removed since the listing (a running query's cleanup of old batches): not broken.
            (lay.offsets if kind == "offsets" else lay.commits).remove(b)
            lay.files.pop(rel, None)
            continue
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            lay.unparsable[rel] = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
            continue
        (lay.offset_meta if kind == "offsets" else lay.commit_meta)[b] = meta
        if kind == "offsets":
            lay.offset_sources[b] = [None if r.strip() == "-" else json.loads(r) for r in rest]


def _read_operators(
    lay: Layout, dirs: dict[str, dict[str, FileInfo]], text: Callable[[str], str]
) -> None:
    """Each stateful operator's metadata (its name and stores); {} when it cannot be read."""
    ops = {s.op for s in lay.stores.values()} | {
        p.split("/")[1] for p in dirs if p.startswith("state/")
    }
    for op in sorted(ops):
        op_meta = operator_metadata_file(op, lay.files)
        if op_meta is None:
            lay.operators.setdefault(op, {})
            continue
        try:
            _v, meta, _rest = parse_log_file(text(op_meta))
            lay.operators[op] = meta
        except (OSError, UnicodeDecodeError, ValueError):
            lay.operators[op] = {}


def operator_metadata_file(op: str, files: dict[str, Any]) -> str | None:
    """Where operator ``op``'s name and stores are: ``_metadata/metadata`` (v1, written once),
    else the newest ``_metadata/v2/<batch>`` (transformWithState writes only v2, one file per
    batch that changed it, a repartition's included)."""
    v1 = f"state/{op}/_metadata/metadata"
    if v1 in files:
        return v1
    prefix = f"state/{op}/_metadata/v2/"
    batches = [int(n) for p in files if p.startswith(prefix) and (n := p[len(prefix) :]).isdigit()]
    return f"{prefix}{max(batches)}" if batches else None


def _add_state_folder(lay: Layout, parts: list[str], entries: dict[str, FileInfo]) -> None:
    """One folder of state files: where it sits says operator, partition, store and, for
    ``SSTs/`` and ``_metadata/``, the kind; the names say the versions."""
    # state/<op>/<part>/[<store>/]<file>, state/<op>/<part>/[<store>/]SSTs/<sst>,
    # state/<op>/_metadata/..., state/<op>/_stateSchema/..., state/<op>/<part>/_metadata/schema
    if len(parts) < 3 or not parts[2].isdigit():
        return  # operator-level metadata and schema files
    op, part, rest = parts[1], parts[2], parts[3:]
    fixed = None
    if "_metadata" in rest or "_stateSchema" in rest:
        cut = rest.index("_metadata") if "_metadata" in rest else rest.index("_stateSchema")
        fixed, rest = "schema", rest[:cut]
    elif "SSTs" in rest:
        fixed, rest = "sst", rest[: rest.index("SSTs")]
    store = "/".join(rest)
    key = "/".join(p for p in (op, part, store) if p)
    sf = lay.stores.get(key)
    if sf is None:
        sf = lay.stores[key] = StoreFiles(op=op, part=part, store=store)
    match = _VERSION_FILE.match
    for name, f in entries.items():
        if name.endswith(".crc") or _is_temp(name):
            continue
        if fixed is not None:
            sf.add(fixed, f.size, None)
            continue
        m = match(name)
        if m is None:
            sf.add("other", f.size, None)
        else:
            sf.add(m.group(2), f.size, int(m.group(1)))


def _is_temp(name: str) -> bool:
    return name.endswith(".tmp") or name == "_temporary"

"""Hudi's consistent-hashing bucket index (RFC-42,
``hoodie.index.bucket.engine=CONSISTENT_HASHING``): the hash ring of a partition, Java's hash,
and the hashing metadata files.

A partition's ring is a list of nodes, each the inclusive upper end of a hash range and the
file id prefix of the one file group holding it (Java ``ConsistentHashingNode``); a key goes to
the first node whose value is at least its hash, wrapping to the first node (Java
``ConsistentBucketIdentifier.getBucket``)::

    hash = XXHash32(utf8(String.join("", extractRecordKeysByFields(key, hashFields))), seed 0)
    node = ring.ceiling(hash & 0x7fffffff) or ring.first

(``HashID.getXXHash32``). A new partition gets ``hoodie.bucket.index.num.buckets`` nodes
splitting ``[0, 0x7fffffff]`` evenly, whose prefixes are name-based UUIDs of the partition and
the range, so every writer creates the same ring (``HoodieConsistentHashingMetadata``
``constructDefaultHashingNodes`` / ``generateUUID``). A node's file group id is its prefix
with ``-0`` (``FSUtils.createNewFileId(prefix, 0)``).

Files (``ConsistentBucketIndexUtils``), under ``.hoodie/.bucket_index/consistent_hashing_metadata``
``/<partition path>/``:

* ``<instant>.hashing_meta`` -- the ring as Jackson writes ``HoodieConsistentHashingMetadata``
  (pretty-printed JSON: ``version``, ``partitionPath``, ``instant``, ``numBuckets``, ``seqNo``,
  ``nodes`` of ``value`` / ``fileIdPrefix`` / ``tag``); the first one's instant is
  ``00000000000000``, a resize writes one named by its replace commit;
* ``<instant>.commit`` -- an empty marker: that metadata is committed. The partition's ring is
  the latest committed file's (``loadMetadata``); a file without a marker counts as committed
  (and gets its marker) when its instant is ``00000000000000`` or a completed commit on the
  timeline.
"""

from __future__ import annotations

import enum
import hashlib
import itertools
import json
import struct
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.errors import ConfigError, CorruptFileError
from hudi_ds.index.bucket import hash_key_spans, record_key_strings, validate_num_buckets
from hudi_ds.storage import Storage

#: the hash space is ``[0, HASH_VALUE_MASK]`` (``HoodieConsistentHashingMetadata.HASH_VALUE_MASK``)
HASH_VALUE_MASK = 0x7FFFFFFF
#: the instant of a partition's first ring (``HoodieTimeline.INIT_INSTANT_TS``)
INIT_INSTANT = "00000000000000"
#: where the rings live, relative to the table (``HoodieTableMetaClient.getHashingMetadataPath``)
METADATA_DIR = ".hoodie/.bucket_index/consistent_hashing_metadata"
METADATA_SUFFIX = ".hashing_meta"
COMMIT_SUFFIX = ".commit"
#: ``HoodieConsistentHashingMetadata.version`` of the files Java writes
METADATA_VERSION = 0

_P1 = np.uint32(2654435761)
_P2 = np.uint32(2246822519)
_P3 = np.uint32(3266489917)
_P4 = np.uint32(668265263)
_P5 = np.uint32(374761393)

U32 = npt.NDArray[np.uint32]
I64 = npt.NDArray[np.int64]


class BucketLayoutLike(Protocol):
    """What a ring needs of the bucket layout (:class:`hudi_ds.index.core.BucketLayout`)."""

    @property
    def num_buckets(self) -> int: ...

    @property
    def hash_fields(self) -> tuple[str, ...]: ...


class NodeTag(enum.StrEnum):
    """``ConsistentHashingNode.NodeTag``: NORMAL in a committed ring; REPLACE / DELETE mark the
    children nodes of a resize in flight."""

    NORMAL = "NORMAL"
    REPLACE = "REPLACE"
    DELETE = "DELETE"


@dataclass(frozen=True)
class HashingNode:
    """One node of a ring: the inclusive upper end ``value`` of its hash range and its file
    group's id prefix."""

    value: int
    file_id_prefix: str
    tag: NodeTag = NodeTag.NORMAL

    @property
    def file_id(self) -> str:
        """The id of the node's file group (``FSUtils.createNewFileId(prefix, 0)``)."""
        return f"{self.file_id_prefix}-0"


@dataclass(frozen=True)
class HashingMetadata:
    """A partition's ring (Java ``HoodieConsistentHashingMetadata``), nodes by value."""

    partition_path: str
    instant: str
    num_buckets: int
    seq_no: int
    nodes: tuple[HashingNode, ...]
    version: int = METADATA_VERSION

    @classmethod
    def initial(cls, partition_path: str, num_buckets: int) -> HashingMetadata:
        """Java's first ring of a partition: ``num_buckets`` even ranges, prefixes derived from
        the partition and the range (``constructDefaultHashingNodes``)."""
        validate_num_buckets(num_buckets)
        step = (HASH_VALUE_MASK + num_buckets - 1) // num_buckets
        nodes, start = [], 0
        for i in range(1, num_buckets + 1):
            end = min(step * i, HASH_VALUE_MASK)
            nodes.append(HashingNode(end, _node_uuid(partition_path, start, end)))
            start = end
        return cls(partition_path, INIT_INSTANT, num_buckets, 0, tuple(nodes))

    @property
    def file_name(self) -> str:
        return self.instant + METADATA_SUFFIX

    def to_bytes(self) -> bytes:
        """The file content, as Jackson's default pretty printer writes it."""
        nodes = ", ".join(
            "{\n"
            f'    "value" : {n.value},\n'
            f'    "fileIdPrefix" : {json.dumps(n.file_id_prefix)},\n'
            f'    "tag" : "{n.tag.value}"\n'
            "  }"
            for n in self.nodes
        )
        text = (
            "{\n"
            f'  "version" : {self.version},\n'
            f'  "partitionPath" : {json.dumps(self.partition_path)},\n'
            f'  "instant" : {json.dumps(self.instant)},\n'
            f'  "numBuckets" : {self.num_buckets},\n'
            f'  "seqNo" : {self.seq_no},\n'
            f'  "nodes" : [ {nodes} ]\n'
            "}"
        )
        return text.encode("utf-8")

    @classmethod
    def from_bytes(cls, data: bytes, where: str) -> HashingMetadata:
        """Parse a ``.hashing_meta`` file (unknown fields ignored, as Java's reader does).

        Raises:
            CorruptFileError: not Java's JSON, or a ring with gaps or overlaps, naming ``where``.
        """
        try:
            doc = json.loads(data.decode("utf-8"))
            nodes = tuple(
                HashingNode(
                    int(n["value"]),
                    str(n["fileIdPrefix"]),
                    NodeTag(n.get("tag") or NodeTag.NORMAL.value),
                )
                for n in doc["nodes"]
            )
            md = cls(
                partition_path=str(doc.get("partitionPath") or ""),
                instant=str(doc["instant"]),
                num_buckets=int(doc["numBuckets"]),
                seq_no=int(doc.get("seqNo", 0)),
                nodes=nodes,
                version=int(doc.get("version", METADATA_VERSION)),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise CorruptFileError(f"{where}: not a consistent hashing metadata file ({e})") from e
        md.check_ring(where)
        return md

    def check_ring(self, where: str) -> None:
        """Raise unless the nodes cover the hash space once: values strictly increasing in
        ``[0, 0x7fffffff]`` (each range ``(previous, value]``, the first wrapping from the last),
        distinct file groups, every node NORMAL.

        Raises:
            CorruptFileError: naming ``where`` and the offending node.
        """
        if not self.nodes:
            raise CorruptFileError(f"{where}: the ring has no nodes")
        prev = -1
        seen: set[str] = set()
        for n in self.nodes:
            if not prev < n.value <= HASH_VALUE_MASK:
                raise CorruptFileError(
                    f"{where}: node {n.value} ({n.file_id_prefix}) is out of order or outside "
                    f"[0, {HASH_VALUE_MASK}]: the ring overlaps itself"
                )
            if n.file_id_prefix in seen:
                raise CorruptFileError(f"{where}: file group {n.file_id_prefix} holds two ranges")
            if n.tag is not NodeTag.NORMAL:
                raise CorruptFileError(f"{where}: node {n.value} is tagged {n.tag.value}")
            seen.add(n.file_id_prefix)
            prev = n.value

    def split(self, node: int) -> tuple[HashingNode, HashingNode] | None:
        """The two children of node ``node`` splitting its range in the middle, with new
        random file id prefixes, or None when the range cannot be split
        (``ConsistentBucketIdentifier.splitBucket``)."""
        former = self.nodes[node - 1].value  # node 0's range wraps from the last node
        value = self.nodes[node].value
        mid = former + value + (0 if former < value else HASH_VALUE_MASK + 1)
        mid = (mid >> 1) & HASH_VALUE_MASK
        if mid in (former, value):
            return None
        return (
            HashingNode(mid, str(uuid.uuid4()), NodeTag.REPLACE),
            HashingNode(value, str(uuid.uuid4()), NodeTag.REPLACE),
        )

    def merge(self, nodes: Sequence[int]) -> list[HashingNode]:
        """The children merging the adjacent nodes ``nodes`` (ring positions in ring order,
        possibly wrapping past the last node) into one: every node but the last tagged DELETE
        (no file id prefix), the last one's value REPLACEd by a new file group, which then
        holds the whole range (``ConsistentBucketIdentifier.mergeBucket``).

        Raises:
            ValueError: fewer than two nodes, or nodes that are not neighbours on the ring.
        """
        if len(nodes) < 2:
            raise ValueError("at least two nodes are merged")
        for a, b in itertools.pairwise(nodes):
            if b != (a + 1) % len(self.nodes):
                raise ValueError(f"nodes {a} and {b} are not neighbours: a discontinuous range")
        out = [HashingNode(self.nodes[i].value, "", NodeTag.DELETE) for i in nodes[:-1]]
        out.append(HashingNode(self.nodes[nodes[-1]].value, str(uuid.uuid4()), NodeTag.REPLACE))
        return out

    def with_children(
        self, children: Sequence[HashingNode], instant: str, where: str
    ) -> HashingMetadata:
        """The ring after a resize: REPLACE children take (or add) their value's place, DELETE
        ones remove the node there; all NORMAL, ``seq_no`` + 1, named by the resize's instant
        (``ConsistentBucketIdentifier.initialize``, ``HoodieSparkConsistentBucketIndex``
        ``.updateLocation``; the initial bucket count is kept).

        Raises:
            CorruptFileError: a child deletes a value the ring does not hold, or the new ring
                has gaps or overlaps (naming ``where``).
        """
        ring = {n.value: n for n in self.nodes}
        for c in children:
            if c.tag is NodeTag.REPLACE:
                ring[c.value] = HashingNode(c.value, c.file_id_prefix)
            elif c.tag is NodeTag.DELETE:
                if ring.pop(c.value, None) is None:
                    raise CorruptFileError(f"{where}: child node {c.value} deletes no node")
            else:
                raise CorruptFileError(f"{where}: child node {c.value} is tagged {c.tag.value}")
        md = HashingMetadata(
            self.partition_path,
            instant,
            self.num_buckets,
            self.seq_no + 1,
            tuple(ring[v] for v in sorted(ring)),
            self.version,
        )
        md.check_ring(where)
        return md

    @property
    def values(self) -> npt.NDArray[np.int64]:
        return np.fromiter((n.value for n in self.nodes), np.int64, len(self.nodes))

    def node_indexes(self, hashes: U32) -> I64:
        """The node of every hash (masked to the hash space): the first node whose value is at
        least the hash, wrapping to the first (``ConsistentBucketIdentifier.getBucket``)."""
        masked = (hashes & np.uint32(HASH_VALUE_MASK)).astype(np.int64)
        idx = np.searchsorted(self.values, masked, side="left")
        idx[idx == len(self.nodes)] = 0
        return idx.astype(np.int64)


def nodes_to_json(nodes: Sequence[HashingNode]) -> str:
    """Nodes as Java's ``ConsistentHashingNode.toJsonString`` writes them (a clustering
    group's child nodes; a DELETE child has no file id prefix: ``null``)."""
    items = ", ".join(
        "{\n"
        f'  "value" : {n.value},\n'
        f'  "fileIdPrefix" : {json.dumps(n.file_id_prefix or None)},\n'
        f'  "tag" : "{n.tag.value}"\n'
        "}"
        for n in nodes
    )
    return f"[ {items} ]"


def nodes_from_json(text: str, where: str) -> list[HashingNode]:
    """Parse :func:`nodes_to_json`'s form (``ConsistentHashingNode.fromJsonString``).

    Raises:
        CorruptFileError: not a JSON list of nodes, naming ``where``.
    """
    try:
        return [
            HashingNode(
                int(n["value"]), str(n.get("fileIdPrefix") or ""), NodeTag(n.get("tag", "NORMAL"))
            )
            for n in json.loads(text or "[]")
        ]
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise CorruptFileError(f"{where}: bad consistent hashing child nodes ({e})") from e


def save_metadata(storage: Storage, md: HashingMetadata) -> None:
    """Write ``md`` as its partition's ``<instant>.hashing_meta`` (not yet committed)."""
    folder = partition_dir(md.partition_path)
    storage.makedirs(folder)
    storage.create_if_absent(f"{folder}/{md.file_name}", md.to_bytes())


def commit_metadata(storage: Storage, partition_path: str, instant: str) -> None:
    """Write the commit marker of the partition's ``<instant>.hashing_meta``
    (``ConsistentBucketIndexUtils.createCommitMarker``)."""
    storage.create_if_absent(f"{partition_dir(partition_path)}/{instant}{COMMIT_SUFFIX}")


def _node_uuid(partition_path: str, start: int, end: int) -> str:
    """``UUID.nameUUIDFromBytes(bigEndianLong(start) + bigEndianLong(end) + utf8(partition))``:
    an MD5 name-based (version 3) UUID."""
    digest = hashlib.md5(
        struct.pack(">qq", start, end) + partition_path.encode("utf-8"), usedforsecurity=False
    ).digest()
    return str(uuid.UUID(bytes=digest, version=3))


def _rotl(x: U32, r: int) -> U32:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _words(mat: npt.NDArray[np.uint32], at: int) -> U32:
    """Little-endian 32-bit words at byte ``at`` of every row of ``mat``."""
    out: U32 = mat[:, at] | (mat[:, at + 1] << np.uint32(8))
    return out | (mat[:, at + 2] << np.uint32(16)) | (mat[:, at + 3] << np.uint32(24))


def _xxhash32_fixed(mat: npt.NDArray[np.uint32], seed: int) -> U32:
    """XXH32 of rows of equal length ``mat.shape[1]`` (bytes widened to uint32)."""
    n, length = mat.shape
    s = np.uint32(seed)
    pos = 0
    with np.errstate(over="ignore"):
        if length >= 16:
            v = [
                np.full(n, s + _P1 + _P2, np.uint32),
                np.full(n, s + _P2, np.uint32),
                np.full(n, s, np.uint32),
                np.full(n, s - _P1, np.uint32),
            ]
            while pos + 16 <= length:
                for lane in range(4):
                    v[lane] = _rotl(v[lane] + _words(mat, pos + 4 * lane) * _P2, 13) * _P1
                pos += 16
            h = _rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)
        else:
            h = np.full(n, s + _P5, np.uint32)
        h = h + np.uint32(length & 0xFFFFFFFF)
        while pos + 4 <= length:
            h = _rotl(h + _words(mat, pos) * _P3, 17) * _P4
            pos += 4
        while pos < length:
            h = _rotl(h + mat[:, pos] * _P5, 11) * _P1
            pos += 1
        h ^= h >> np.uint32(15)
        h *= _P2
        h ^= h >> np.uint32(13)
        h *= _P3
        h ^= h >> np.uint32(16)
    return h


def xxhash32(data: npt.NDArray[np.uint8], offsets: I64, seed: int = 0) -> U32:
    """XXH32 (``net.jpountz.xxhash.XXHash32``) of the byte strings ``data[offsets[i]:
    offsets[i + 1]]``, vectorised per distinct length."""
    lengths = np.diff(offsets)
    out = np.empty(len(lengths), np.uint32)
    for length in np.unique(lengths).tolist():
        rows = np.flatnonzero(lengths == length)
        idx = offsets[rows][:, None] + np.arange(length, dtype=np.int64)[None, :]
        out[rows] = _xxhash32_fixed(data[idx].astype(np.uint32), seed)
    return out


_NULL_TEXT = b"null"  # String.join renders a null hash key (``__null__``) as "null"


def _joined_hash_keys(arr: pa.Array, hash_fields: Sequence[str]) -> tuple[np.ndarray, I64]:
    """``utf8(String.join("", extractRecordKeysByFields(key, hash_fields)))`` of every key,
    as one byte buffer and its offsets."""
    n = len(arr)
    sp = hash_key_spans(arr, hash_fields)
    data = np.concatenate([sp.data, np.frombuffer(_NULL_TEXT, np.uint8)])
    starts = sp.starts.copy()
    ends = sp.ends.copy()
    starts[sp.null], ends[sp.null] = len(sp.data), len(data)
    ends[sp.empty] = starts[sp.empty]
    rows = np.concatenate([sp.rows, sp.whole])
    starts = np.concatenate([starts, sp.key_starts[sp.whole]])
    ends = np.concatenate([ends, sp.key_ends[sp.whole]])
    order = np.argsort(rows, kind="stable")  # values stay in key order within a row
    rows, starts, ends = rows[order], starts[order], ends[order]
    seg_len = ends - starts
    per_row = np.bincount(rows, weights=seg_len, minlength=n).astype(np.int64)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(per_row, out=offsets[1:])
    seg_out = np.zeros(len(seg_len), np.int64)
    if len(seg_len) > 1:
        np.cumsum(seg_len[:-1], out=seg_out[1:])
    total = int(seg_len.sum())
    gather = np.repeat(starts - seg_out, seg_len) + np.arange(total, dtype=np.int64)
    return data[gather], offsets


def key_hashes(record_keys: pa.Array | pa.ChunkedArray, hash_fields: Sequence[str]) -> U32:
    """Java's consistent-hashing hash of every record key (before the mask), vectorised.

    Args:
        record_keys: ``_hoodie_record_key`` values (strings, no nulls).
        hash_fields: ``hoodie.bucket.index.hash.field`` (empty: all key fields).

    Raises:
        SchemaError: the keys are not strings or contain nulls.
    """
    parts = []
    for arr in record_key_strings(record_keys):
        buf, offsets = _joined_hash_keys(arr, hash_fields)
        parts.append(xxhash32(buf, offsets))
    return np.concatenate(parts) if parts else np.zeros(0, np.uint32)


def partition_dir(partition_path: str) -> str:
    """The folder of a partition's rings (the metadata folder itself when unpartitioned)."""
    return f"{METADATA_DIR}/{partition_path}" if partition_path else METADATA_DIR


def load_metadata(
    storage: Storage, partition_path: str, completed: Callable[[str], bool]
) -> HashingMetadata | None:
    """The partition's latest committed ring, or None when it has none
    (``ConsistentBucketIndexUtils.loadMetadata``).

    Files after the latest committed one are committed now (their marker written) when their
    instant is ``00000000000000`` or ``completed(instant)`` (a completed commit on the
    timeline); others stay uncommitted and are ignored. Java's last resort for a file whose
    replace commit was already archived (``recommitMetadataFile``: its file groups are on
    storage) is not taken: the resize that writes such files is not run by hudi_ds.

    Raises:
        CorruptFileError: a commit marker without its metadata file, or a bad file.
    """
    folder = partition_dir(partition_path)
    if not storage.is_dir(folder):
        return None
    names = {info.path.rsplit("/", 1)[-1] for info in storage.list_files(folder)}
    metas = sorted(n[: -len(METADATA_SUFFIX)] for n in names if n.endswith(METADATA_SUFFIX))
    commits = {n.split(".", 1)[0] for n in names if n.endswith(COMMIT_SUFFIX)}
    orphan = commits.difference(metas)
    if orphan:
        raise CorruptFileError(
            f"{storage.uri(folder)}: commit marker {min(orphan)}{COMMIT_SUFFIX} has no "
            f"{min(orphan)}{METADATA_SUFFIX}"
        )
    committed = [m for m in metas if m in commits]
    latest = committed[-1] if committed else None
    for instant in metas:
        if latest is not None and instant <= latest:
            continue
        if instant == INIT_INSTANT or completed(instant):
            storage.create_if_absent(f"{folder}/{instant}{COMMIT_SUFFIX}")
            latest = instant
    if latest is None:
        return None
    rel = f"{folder}/{latest}{METADATA_SUFFIX}"
    return HashingMetadata.from_bytes(storage.read_bytes(rel), storage.uri(rel))


def load_or_create_metadata(
    storage: Storage, partition_path: str, num_buckets: int, completed: Callable[[str], bool]
) -> HashingMetadata:
    """The partition's ring; a partition without one gets Java's initial ring, written and
    committed (``loadOrCreateMetadata``: every writer creates the same content, so concurrent
    creations need no lock).

    Raises:
        CorruptFileError: see :func:`load_metadata`.
        ConfigError: a bad ``num_buckets``.
    """
    md = load_metadata(storage, partition_path, completed)
    if md is not None:
        return md
    md = HashingMetadata.initial(partition_path, num_buckets)
    folder = partition_dir(partition_path)
    storage.makedirs(folder)
    storage.create_if_absent(f"{folder}/{md.file_name}", md.to_bytes())
    storage.create_if_absent(f"{folder}/{md.instant}{COMMIT_SUFFIX}")
    loaded = load_metadata(storage, partition_path, completed)
    if loaded is None:
        raise ConfigError(
            f"{storage.uri(folder)}: the consistent hashing metadata of partition "
            f"{partition_path!r} could not be created"
        )
    return loaded


class Rings:
    """The rings of the partitions one writer task routes keys to, each loaded (or created)
    once, as Java's ``HoodieSparkConsistentBucketIndex`` loads or creates a partition's ring
    while tagging.

    Args:
        storage: the table's storage.
        layout: the bucket layout (its ``num_buckets``: a new partition's nodes; its
            ``hash_fields``).
        completed: whether an instant is a completed commit (see :func:`load_metadata`).
    """

    def __init__(
        self, storage: Storage, layout: BucketLayoutLike, completed: Callable[[str], bool]
    ) -> None:
        self._storage = storage
        self._num_buckets = layout.num_buckets
        self._hash_fields = list(layout.hash_fields)
        self._completed = completed
        self._rings: dict[str, HashingMetadata] = {}

    def ring(self, partition_path: str) -> HashingMetadata:
        """The partition's committed ring (created for a new partition)."""
        ring = self._rings.get(partition_path)
        if ring is None:
            ring = load_or_create_metadata(
                self._storage, partition_path, self._num_buckets, self._completed
            )
            self._rings[partition_path] = ring
        return ring

    def nodes_of(
        self, keys: pa.Array | pa.ChunkedArray, pidx: I64, names: Sequence[str]
    ) -> tuple[I64, int]:
        """The node (position in its partition's ring) of every key, the key of row ``i``
        belonging to partition ``names[pidx[i]]``; and the most nodes of a ring."""
        hashes = key_hashes(keys, self._hash_fields)
        out = np.empty(len(hashes), np.int64)
        order = np.argsort(pidx, kind="stable")
        bounds = np.searchsorted(pidx[order], np.arange(len(names) + 1))
        width = 1
        for i, name in enumerate(names):
            rows = order[bounds[i] : bounds[i + 1]]
            ring = self.ring(name)
            out[rows] = ring.node_indexes(hashes[rows])
            width = max(width, len(ring.nodes))
        return out, width

    def file_id(self, partition_path: str, node: int) -> str:
        """The file group of node ``node`` of the partition's (loaded) ring."""
        return self._rings[partition_path].nodes[node].file_id


def has_consistent_hashing_metadata(storage: Storage) -> bool:
    """The table keeps consistent-hashing rings (a table Java wrote with that engine)."""
    return storage.is_dir(METADATA_DIR)


def load_committed_rings(
    storage: Storage, completed: Callable[[str], bool]
) -> dict[str, HashingMetadata]:
    """The committed ring of every partition that has one (:func:`load_metadata` of each
    folder holding a ``.hashing_meta`` file under :data:`METADATA_DIR`), by partition path.

    Raises:
        CorruptFileError: see :func:`load_metadata`.
    """
    if not storage.is_dir(METADATA_DIR):
        return {}
    folders = set()
    for info in storage.list_files(METADATA_DIR, recursive=True):
        if info.path.endswith(METADATA_SUFFIX):
            folders.add(info.path.rsplit("/", 1)[0] if "/" in info.path else "")
    rings: dict[str, HashingMetadata] = {}
    for folder in sorted(folders):
        rel = folder.removeprefix(METADATA_DIR).strip("/")
        ring = load_metadata(storage, rel, completed)
        if ring is not None:
            rings[rel] = ring
    return rings


@dataclass(frozen=True)
class RingRouter:
    """The file group of a key under a snapshot of the table's committed rings, without
    storage: a driver loads it once and ships it to its tasks (small and picklable).

    A partition without a ring routes by the ring a writer would create for it
    (:meth:`HashingMetadata.initial`, the same on every writer). The snapshot may fall behind
    a resize committed later; a writer routes by the ring it loads itself, so a stale
    snapshot only costs the grouping it was for, never a row.

    Attributes:
        rings: committed rings by partition path.
        num_buckets: a new partition's node count (``hoodie.bucket.index.num.buckets``).
        hash_fields: ``hoodie.bucket.index.hash.field`` (empty: all key fields).
    """

    rings: dict[str, HashingMetadata]
    num_buckets: int
    hash_fields: tuple[str, ...]

    def ring(self, partition_path: str) -> HashingMetadata:
        ring = self.rings.get(partition_path)
        if ring is None:
            ring = HashingMetadata.initial(partition_path, self.num_buckets)
        return ring

    def file_ids(
        self, record_keys: pa.Array | pa.ChunkedArray, partition_paths: pa.Array
    ) -> pa.Array:
        """The file group id of every row: the node of its key's hash in the ring of its
        partition (``partition_paths``, aligned with ``record_keys``)."""
        hashes = key_hashes(record_keys, self.hash_fields)
        enc = pc.dictionary_encode(partition_paths)
        if isinstance(enc, pa.ChunkedArray):
            enc = enc.combine_chunks()
        pidx = np.asarray(enc.indices, dtype=np.int64)
        out = np.empty(len(hashes), object)
        for i, name in enumerate(enc.dictionary.to_pylist()):
            rows = np.flatnonzero(pidx == i)
            ring = self.ring(name)
            ids = np.array([n.file_id for n in ring.nodes], object)
            out[rows] = ids[ring.node_indexes(hashes[rows])]
        return pa.array(out, pa.string())

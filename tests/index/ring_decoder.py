"""A decoder of Java's consistent-hashing metadata written from Hudi's source, independent of
hudi_ds's code: the tests check the rings hudi_ds writes against it.

* ``<instant>.hashing_meta`` under ``.hoodie/.bucket_index/consistent_hashing_metadata/
  <partition>/`` is Jackson's JSON of ``HoodieConsistentHashingMetadata`` (fields ``version``,
  ``partitionPath``, ``instant``, ``numBuckets``, ``seqNo``, ``nodes``; each node a
  ``ConsistentHashingNode``: ``value`` (a Java int), ``fileIdPrefix``, ``tag``); an empty
  ``<instant>.commit`` beside it commits it, and the partition's ring is the latest committed
  one (``ConsistentBucketIndexUtils.loadMetadata``).
* A node owns the hashes from just after the previous node's value up to its own; the first
  node's range wraps around from the last node's value (``ConsistentBucketIdentifier
  .getBucket``: the ceiling node, else the first). The hash is XXH32 (seed 0) of the hash
  fields' values joined, masked to ``0x7fffffff`` (``HashID.getXXHash32``), written here from
  the xxHash specification.
* A node's file group is ``<fileIdPrefix>-0`` (``FSUtils.createNewFileId(prefix, 0)``).
"""

from __future__ import annotations

import json
import struct
import uuid
from dataclasses import dataclass
from pathlib import Path

MASK = 0x7FFFFFFF
META_DIR = ".hoodie/.bucket_index/consistent_hashing_metadata"


def ref_xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 from the xxHash specification, one byte string at a time."""
    p1, p2, p3, p4, p5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
    m = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & m

    def word(i: int) -> int:
        return int.from_bytes(data[i : i + 4], "little")

    n, i = len(data), 0
    if n >= 16:
        acc = [(seed + p1 + p2) & m, (seed + p2) & m, seed & m, (seed - p1) & m]
        while i + 16 <= n:
            for lane in range(4):
                acc[lane] = rotl((acc[lane] + word(i + 4 * lane) * p2) & m, 13) * p1 & m
            i += 16
        h = (rotl(acc[0], 1) + rotl(acc[1], 7) + rotl(acc[2], 12) + rotl(acc[3], 18)) & m
    else:
        h = (seed + p5) & m
    h = (h + n) & m
    while i + 4 <= n:
        h = rotl((h + word(i) * p3) & m, 17) * p4 & m
        i += 4
    while i < n:
        h = rotl((h + data[i] * p5) & m, 11) * p1 & m
        i += 1
    h ^= h >> 15
    h = h * p2 & m
    h ^= h >> 13
    h = h * p3 & m
    return h ^ (h >> 16)


def ref_hash_keys(record_key: str, hash_fields: list[str]) -> str:
    """``String.join("", KeyGenUtils.extractRecordKeysByFields(key, fields))`` for the keys of
    these tests: a simple key is one value; ``f1:v1,f2:v2`` keeps the values of the fields."""
    if "," not in record_key or ":" not in record_key:
        return record_key
    out = []
    for part in record_key.split(","):
        field, value = part.split(":", 1)
        if field in hash_fields:
            out.append("null" if value == "__null__" else "" if value == "__empty__" else value)
    return "".join(out) if out else record_key


def decode_hashing_meta(data: bytes) -> dict:
    """A ``.hashing_meta`` file as Java's ``HoodieConsistentHashingMetadata.fromBytes`` reads it:
    exactly Jackson's fields, node values Java ints, committed rings' nodes NORMAL."""
    doc = json.loads(data.decode("utf-8"))
    assert set(doc) == {"version", "partitionPath", "instant", "numBuckets", "seqNo", "nodes"}
    for node in doc["nodes"]:
        assert set(node) <= {"value", "fileIdPrefix", "tag"}
        assert -(2**31) <= node["value"] < 2**31
        assert node.get("tag", "NORMAL") == "NORMAL", node
    return doc


def ring_ranges(nodes: list[dict]) -> list[tuple[str, list[tuple[int, int]]]]:
    """Each node's file id prefix and the ``[start, end]`` hash ranges it owns (the first node's
    range wraps around past the last value); asserts they cover ``[0, 0x7fffffff]`` once."""
    values = [n["value"] for n in nodes]
    assert values, "a ring without nodes"
    assert values == sorted(values) and len(set(values)) == len(values), values
    assert values[0] >= 0 and values[-1] <= MASK, values
    assert len({n["fileIdPrefix"] for n in nodes}) == len(nodes), "a file group holds two ranges"
    out = []
    for i, n in enumerate(nodes):
        if i:
            ranges = [(values[i - 1] + 1, n["value"])]
        else:  # (last, MASK] and [0, first]
            ranges = [(0, n["value"])] + ([(values[-1] + 1, MASK)] if values[-1] < MASK else [])
        out.append((n["fileIdPrefix"], ranges))
    flat = sorted(r for _, rs in out for r in rs)
    at = 0
    for start, end in flat:
        assert start == at and end >= start, f"gap or overlap at {at}: {flat}"
        at = end + 1
    assert at == MASK + 1, f"the ring ends at {at - 1}"
    return out


def java_initial_nodes(partition: str, n: int) -> list[tuple[int, str]]:
    """``constructDefaultHashingNodes``: even ranges, name-based UUID prefixes."""
    step = (MASK + n - 1) // n
    out, start = [], 0
    for i in range(1, n + 1):
        end = min(step * i, MASK)
        namespace = uuid.UUID(bytes=struct.pack(">qq", start, end))
        out.append((end, str(uuid.uuid3(namespace, partition))))  # md5(longs + partition)
        start = end
    return out


def node_of(ring: list[tuple[int, str]], key: str, fields: list[str]) -> str:
    """The file id prefix of the node holding ``key``: the ceiling node, else the first."""
    h = ref_xxh32(ref_hash_keys(key, fields).encode()) & MASK
    for value, prefix in ring:
        if h <= value:
            return prefix
    return ring[0][1]


@dataclass(frozen=True)
class Ring:
    """A partition's committed ring as read from its files."""

    instant: str
    seq_no: int
    num_buckets: int
    nodes: list[tuple[int, str]]  # (value, file id prefix), by value

    @property
    def file_ids(self) -> set[str]:
        return {f"{prefix}-0" for _, prefix in self.nodes}


def committed_ring(table: str | Path, partition: str) -> Ring:
    """The partition's latest committed ring, its coverage checked (:func:`ring_ranges`)."""
    folder = Path(table) / META_DIR / partition if partition else Path(table) / META_DIR
    names = {p.name for p in folder.iterdir()}
    committed = sorted(
        n.split(".")[0]
        for n in names
        if n.endswith(".hashing_meta") and n.replace(".hashing_meta", ".commit") in names
    )
    assert committed, f"{folder}: no committed ring"
    doc = decode_hashing_meta((folder / f"{committed[-1]}.hashing_meta").read_bytes())
    assert doc["partitionPath"] == partition and doc["instant"] == committed[-1]
    ring_ranges(doc["nodes"])
    nodes = [(n["value"], n["fileIdPrefix"]) for n in doc["nodes"]]
    return Ring(doc["instant"], doc["seqNo"], doc["numBuckets"], nodes)


def check_ring_matches_file_groups(table: str | Path, partition: str, live: dict[str, int]) -> Ring:
    """The partition's committed ring covers the hash space once and every live file group
    (``live``: file id -> size, as hudi-rs lists the latest file slices) is one of its nodes'.
    """
    ring = committed_ring(table, partition)
    assert live, f"{partition}: no file groups"
    stray = set(live) - ring.file_ids
    assert not stray, f"{partition}: file groups {sorted(stray)} are no node of ring {ring}"
    return ring

"""Merge modes, strategy ids, payload classes, and the merge behaviour each one selects.

A table merges versions of a key in one of three modes, fixed when the table is created:

* ``COMMIT_TIME_ORDERING`` -- the latest write wins;
* ``EVENT_TIME_ORDERING`` -- the greatest ordering (precombine) value wins, ties to the latest
  write (the default when an ordering field is configured);
* ``CUSTOM`` -- a user :class:`~hudi_ds.merge.merger.RecordMerger`, named by importable Python
  class paths and chosen by its strategy id.

Hudi's payload classes keep working: each built-in payload maps onto a mode plus a *behaviour*
(how "unchanged" columns and deletes are recognised), as Hudi 1.1 maps them (RFC-97):

* ``OverwriteWithLatestAvroPayload``: commit time, full records;
* ``DefaultHoodieRecordPayload``, ``EventTimeAvroPayload``: event time, full records;
* ``OverwriteNonDefaultsWithLatestAvroPayload``: commit time, a null keeps the older value
  (``IGNORE_DEFAULTS``);
* ``PartialUpdateAvroPayload``: event time, a null keeps the other version's value;
* ``AWSDmsAvroPayload``: commit time, ``Op`` = ``D`` deletes;
* ``MySqlDebeziumAvroPayload``: event time by ``_event_seq`` (``"file.pos"``),
  ``_change_operation_type`` = ``d`` deletes;
* ``PostgresDebeziumAvroPayload``: event time by ``_event_lsn``, ``d`` deletes, the TOAST
  marker ``__debezium_unavailable_value`` keeps the older value (``IGNORE_MARKERS``).

``_hoodie_is_deleted`` = true deletes under every behaviour. The choice is persisted the way Hudi
0.x/1.x readers of a version-6 table expect it: ``hoodie.compaction.payload.class`` (the payload
class) and ``hoodie.compaction.record.merger.strategy`` (the strategy id).

Pre-combining a write batch of a payload table: a version-6 table merges through its payload class
(the recorded one, or the writer's -- ``OverwriteWithLatestAvroPayload`` by default -- when it
records none). Java 0.x de-duplicates an upsert batch with the payload's ``preCombine``
(``HoodieWriteHelper.deduplicateRecords`` -> ``HoodieAvroRecordMerger.merge`` with the de-duping
flag -> ``newer.preCombine(older)``), and ``OverwriteWithLatestAvroPayload.preCombine`` (inherited
unchanged by ``OverwriteNonDefaultsWithLatestAvroPayload`` and ``AWSDmsAvroPayload`` in 0.14/0.15)
keeps ``older`` only when its ordering value is strictly greater: the batch keeps the whole version
with the greatest ordering value, ties to the later one, although the batch's winner then
overwrites the stored record by commit time. :attr:`MergeSpec.payload_precombine` marks those
tables (:meth:`MergeSpec.precombine_props`). Tables that record the merge mode or the commit-time
strategy id instead (Hudi 1.x; tables hudi_ds creates by merge mode record
``hoodie.record.merge.mode``) keep the input order: Java 1.x de-duplicates them with the
commit-time merger (``OverwriteWithLatestMerger.merge`` returns ``newer``; 1.1's
``OverwriteWithLatestAvroPayload.preCombine`` returns ``this``), the later version wins.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hudi_ds.config import Options, WriteConfig
from hudi_ds.errors import ConfigError
from hudi_ds.merge.merger import RecordMerger, load_merger_class
from hudi_ds.table_config import (
    COMMIT_TIME_ORDERING,
    COMMIT_TIME_STRATEGY_ID,
    CUSTOM,
    DEFAULT_PAYLOAD,
    EVENT_TIME_ORDERING,
    EVENT_TIME_STRATEGY_ID,
    OVERWRITE_LATEST_PAYLOAD,
    PAYLOAD_BASED_STRATEGY_ID,
    MergeMode,
    TableConfig,
)

BUILTIN_STRATEGY_IDS: dict[MergeMode | str, str] = {
    COMMIT_TIME_ORDERING: COMMIT_TIME_STRATEGY_ID,
    EVENT_TIME_ORDERING: EVENT_TIME_STRATEGY_ID,
}

# partial update modes (Hudi's PartialUpdateMode)
PARTIAL_NONE = "NONE"
IGNORE_DEFAULTS = "IGNORE_DEFAULTS"
IGNORE_MARKERS = "IGNORE_MARKERS"

DEBEZIUM_UNAVAILABLE_VALUE = "__debezium_unavailable_value"

# merge properties handed to mergers (Hudi's keys)
ORDERING_FIELDS_PROP = TableConfig.ORDERING_FIELDS.key
MERGE_MODE_PROP = TableConfig.RECORD_MERGE_MODE.key
DELETE_FIELD_PROP = "hoodie.payload.delete.field"
DELETE_MARKER_PROP = "hoodie.payload.delete.marker"
PARTIAL_MODE_PROP = TableConfig.PARTIAL_UPDATE_MODE.key
PARTIAL_MARKER_PROP = "hoodie.write.partial.update.custom.marker"
ORDERING_TRANSFORM_PROP = "hudi_ds.merge.ordering.transform"  # "mysql_seq"
#: prefix of the merge properties a Hudi 1.1 table records for its readers
#: (``HoodieTableConfig.RECORD_MERGE_PROPERTY_PREFIX``)
MERGE_PROPERTY_PREFIX = "hoodie.record.merge.property."

MODEL = "org.apache.hudi.common.model."
AWS_DMS_PAYLOAD = MODEL + "AWSDmsAvroPayload"
EVENT_TIME_PAYLOAD = MODEL + "EventTimeAvroPayload"
OVERWRITE_NON_DEFAULTS_PAYLOAD = MODEL + "OverwriteNonDefaultsWithLatestAvroPayload"
PARTIAL_UPDATE_PAYLOAD = MODEL + "PartialUpdateAvroPayload"
MYSQL_DEBEZIUM_PAYLOAD = MODEL + "debezium.MySqlDebeziumAvroPayload"
POSTGRES_DEBEZIUM_PAYLOAD = MODEL + "debezium.PostgresDebeziumAvroPayload"


@dataclass(frozen=True)
class Behaviour:
    """A built-in merge behaviour (what one of Hudi's payload classes does).

    Attributes:
        name: short name (``default``, ``partial_update`` ...).
        payload_class: Hudi's Java payload class.
        mode: the merge mode it orders by.
        merger: the Python merger class path implementing it.
        partial: the partial update mode (``NONE``, ``IGNORE_DEFAULTS``, ``IGNORE_MARKERS``).
        delete_field: a column whose value ``delete_marker`` (case-insensitive) marks a delete.
        delete_marker: see ``delete_field``.
        partial_marker: the value meaning "unchanged" under ``IGNORE_MARKERS``.
        default_ordering: the ordering field used when none is configured.
        ordering_transform: how the ordering column is read (``mysql_seq``: ``"file.pos"``).
        precombine_by_ordering: a commit-time payload whose Java 0.x ``preCombine`` still keeps
            the version with the greatest ordering value within one write batch
            (``OverwriteWithLatestAvroPayload`` and the 0.x subclasses that inherit it).
    """

    name: str
    payload_class: str
    mode: MergeMode
    merger: str
    partial: str = PARTIAL_NONE
    delete_field: str | None = None
    delete_marker: str | None = None
    partial_marker: str | None = None
    default_ordering: str | None = None
    ordering_transform: str | None = None
    precombine_by_ordering: bool = False


_P = "hudi_ds.merge.payloads."
BEHAVIOURS: dict[str, Behaviour] = {
    b.name: b
    for b in (
        Behaviour(
            "overwrite_with_latest",
            OVERWRITE_LATEST_PAYLOAD,
            COMMIT_TIME_ORDERING,
            _P + "OverwriteWithLatestMerger",
            precombine_by_ordering=True,
        ),
        Behaviour("default", DEFAULT_PAYLOAD, EVENT_TIME_ORDERING, _P + "DefaultMerger"),
        Behaviour("event_time", EVENT_TIME_PAYLOAD, EVENT_TIME_ORDERING, _P + "EventTimeMerger"),
        Behaviour(
            "overwrite_non_defaults",
            OVERWRITE_NON_DEFAULTS_PAYLOAD,
            COMMIT_TIME_ORDERING,
            _P + "OverwriteNonDefaultsMerger",
            partial=IGNORE_DEFAULTS,
            precombine_by_ordering=True,
        ),
        Behaviour(
            "partial_update",
            PARTIAL_UPDATE_PAYLOAD,
            EVENT_TIME_ORDERING,
            _P + "PartialUpdateMerger",
            partial=IGNORE_DEFAULTS,
        ),
        Behaviour(
            "aws_dms",
            AWS_DMS_PAYLOAD,
            COMMIT_TIME_ORDERING,
            _P + "AWSDmsMerger",
            delete_field="Op",
            delete_marker="D",
            precombine_by_ordering=True,
        ),
        Behaviour(
            "mysql_debezium",
            MYSQL_DEBEZIUM_PAYLOAD,
            EVENT_TIME_ORDERING,
            _P + "MySqlDebeziumMerger",
            delete_field="_change_operation_type",
            delete_marker="d",
            default_ordering="_event_seq",
            ordering_transform="mysql_seq",
        ),
        Behaviour(
            "postgres_debezium",
            POSTGRES_DEBEZIUM_PAYLOAD,
            EVENT_TIME_ORDERING,
            _P + "PostgresDebeziumMerger",
            partial=IGNORE_MARKERS,
            delete_field="_change_operation_type",
            delete_marker="d",
            partial_marker=DEBEZIUM_UNAVAILABLE_VALUE,
            default_ordering="_event_lsn",
        ),
    )
}
BY_PAYLOAD: dict[str, Behaviour] = {b.payload_class: b for b in BEHAVIOURS.values()}
_BY_SHORT: dict[str, Behaviour] = {
    b.payload_class.rsplit(".", 1)[-1].lower(): b for b in BEHAVIOURS.values()
}
MODE_BEHAVIOUR: dict[MergeMode | str, Behaviour] = {
    COMMIT_TIME_ORDERING: BEHAVIOURS["overwrite_with_latest"],
    EVENT_TIME_ORDERING: BEHAVIOURS["default"],
}


def behaviour_of_payload(payload: str, key: str = "") -> Behaviour:
    """The built-in behaviour of a Hudi payload class (full or short Java name).

    Raises:
        ConfigError: not one of Hudi's built-in payload classes (names ``key`` and the value).
    """
    b = BY_PAYLOAD.get(payload.strip()) or _BY_SHORT.get(payload.strip().rsplit(".", 1)[-1].lower())
    if b is None:
        where = f"option '{key}'={payload!r}" if key else f"payload class {payload!r}"
        known = ", ".join(sorted(p.rsplit(".", 1)[-1] for p in BY_PAYLOAD))
        raise ConfigError(
            f"{where}: not a payload class hudi_ds implements ({known}); for your own merge "
            "logic set hoodie.write.record.merge.mode=CUSTOM and "
            "hoodie.write.record.merge.custom.implementation.classes to a Python RecordMerger"
        )
    return b


@dataclass(frozen=True)
class MergeSpec:
    """How a table merges: mode, behaviour or custom merger, ordering fields (picklable).

    Attributes:
        mode: ``COMMIT_TIME_ORDERING``, ``EVENT_TIME_ORDERING`` or ``CUSTOM``.
        behaviour: the built-in behaviour name, or None for a custom merger.
        ordering_fields: the ordering (precombine) fields, in priority order.
        strategy_id: the merger's strategy id.
        payload_class: the Hudi payload class persisted for Java readers.
        custom_classes: CUSTOM: the configured Python merger class paths.
        by_payload: the merge is chosen through the payload class (a version-6 table whose
            Java 0.x writers merge through it), not by a merge mode or strategy id (Hudi 1.x);
            see :attr:`payload_precombine`.
    """

    mode: MergeMode
    behaviour: str | None = "default"
    ordering_fields: tuple[str, ...] = ()
    strategy_id: str = EVENT_TIME_STRATEGY_ID
    payload_class: str | None = DEFAULT_PAYLOAD
    custom_classes: tuple[str, ...] = ()
    by_payload: bool = False

    @property
    def ordering_field(self) -> str | None:
        """The first ordering field (the one rows are checked, typed and deleted by), if any."""
        return self.ordering_fields[0] if self.ordering_fields else None

    @property
    def is_custom(self) -> bool:
        return self.behaviour is None

    @property
    def builtin(self) -> Behaviour | None:
        return BEHAVIOURS[self.behaviour] if self.behaviour is not None else None

    @property
    def payload_precombine(self) -> bool:
        """True when a write batch pre-combines by ordering value although the table merges
        by commit time: the payload's Java 0.x ``preCombine`` keeps the greatest ordering
        value (see the module docstring); only with ordering fields."""
        b = self.builtin
        return (
            self.by_payload
            and b is not None
            and b.precombine_by_ordering
            and bool(self.ordering_fields)
        )

    @property
    def nulls_mean_unchanged(self) -> bool:
        """True when a null incoming value keeps the stored one (IGNORE_DEFAULTS behaviours)."""
        b = self.builtin
        return b is not None and b.partial == IGNORE_DEFAULTS

    def props(self) -> dict[str, str]:
        """The merge properties handed to the merger (Hudi's keys)."""
        out = {MERGE_MODE_PROP: self.mode.value}
        if self.ordering_fields:
            out[ORDERING_FIELDS_PROP] = ",".join(self.ordering_fields)
        b = self.builtin
        if b is not None:
            out[PARTIAL_MODE_PROP] = b.partial
            if b.delete_field and b.delete_marker:
                out[DELETE_FIELD_PROP] = b.delete_field
                out[DELETE_MARKER_PROP] = b.delete_marker
            if b.partial_marker:
                out[PARTIAL_MARKER_PROP] = b.partial_marker
            if b.ordering_transform and self.ordering_fields == (b.default_ordering,):
                out[ORDERING_TRANSFORM_PROP] = b.ordering_transform
        return out

    def precombine_props(self) -> dict[str, str]:
        """The merge properties for pre-combining one write batch (full rows).

        :meth:`props`, except for a :attr:`payload_precombine` table: the payload's
        ``preCombine`` keeps the whole version with the greatest ordering value, ties to the
        later one (event-time ordering, no partial filling), where merging with the stored
        record goes by commit time.
        """
        out = self.props()
        if self.payload_precombine:
            out[MERGE_MODE_PROP] = EVENT_TIME_ORDERING
            out[PARTIAL_MODE_PROP] = PARTIAL_NONE
            out.pop(PARTIAL_MARKER_PROP, None)
        return out

    def required_columns(self) -> list[str]:
        """Columns a merge reads besides the ones a query asks for."""
        cols = list(self.ordering_fields)
        b = self.builtin
        if b is not None and b.delete_field:
            cols.append(b.delete_field)
        return cols

    def table_properties(self, table_version: int = 6) -> dict[str, str]:
        """The ``hoodie.properties`` entries recording this choice in a new table.

        Version 6: built-ins record their payload class with Hudi's default strategy id (0.x
        readers merge through the payload); a custom merger records its own strategy id, with
        the closest built-in payload as the fallback Java readers apply. Versions 8 and 9:
        see :meth:`_v8_properties` and :meth:`_v9_properties`.
        """
        if table_version >= 9:
            return self._v9_properties()
        if table_version == 8:
            return self._v8_properties()
        strategy = self.strategy_id if self.is_custom else EVENT_TIME_STRATEGY_ID
        out = dict(
            [
                TableConfig.PAYLOAD_CLASS.entry(self.payload_class or DEFAULT_PAYLOAD),
                TableConfig.RECORD_MERGER_STRATEGY.entry(strategy),
            ]
        )
        b = self.builtin
        if b is not None and b.precombine_by_ordering and not self.by_payload:
            # chosen by merge mode (Hudi 1.x): recorded, so that later writers pre-combine a
            # batch by commit time too (Java 0.x ignores the key and merges via the payload)
            out.update([TableConfig.RECORD_MERGE_MODE.entry(self.mode)])
        return out

    def _v8_properties(self) -> dict[str, str]:
        """Hudi 1.0 (``HoodieTableConfig.inferMergingConfigsForPreV9Table``): the merge mode
        inferred from the payload class (Default/EventTime payloads: event time,
        OverwriteWithLatest: commit time, any other payload: ``CUSTOM`` with the payload-based
        strategy), the payload class and the strategy id; a custom merger records ``CUSTOM``,
        its strategy id and ``DefaultHoodieRecordPayload`` (Java's HUDI-8925 fallback)."""
        c = TableConfig
        if self.is_custom:
            mode, payload, strategy = CUSTOM, DEFAULT_PAYLOAD, self.strategy_id
        else:
            payload = self.payload_class or DEFAULT_PAYLOAD
            if payload in (DEFAULT_PAYLOAD, EVENT_TIME_PAYLOAD):
                mode, strategy = EVENT_TIME_ORDERING, EVENT_TIME_STRATEGY_ID
            elif payload == OVERWRITE_LATEST_PAYLOAD:
                mode, strategy = COMMIT_TIME_ORDERING, COMMIT_TIME_STRATEGY_ID
            else:
                mode, strategy = CUSTOM, PAYLOAD_BASED_STRATEGY_ID
        return dict(
            [
                c.RECORD_MERGE_MODE.entry(mode),
                c.PAYLOAD_CLASS.entry(payload),
                c.RECORD_MERGE_STRATEGY_ID.entry(strategy),
            ]
        )

    def _v9_properties(self) -> dict[str, str]:
        """Hudi 1.1 (``HoodieTableConfig.inferMergingConfigsForV9TableCreation``): the merge
        mode and strategy id, no payload class. A built-in behaviour of one of Hudi's
        deprecated payloads other than the two the merge modes stand for records that payload
        as ``hoodie.table.legacy.payload.class`` with its partial update mode and merge
        properties (the table's readers merge as the payload did); a custom merger records
        ``CUSTOM`` and its strategy id."""
        c = TableConfig
        if self.is_custom:
            return dict(
                [
                    c.RECORD_MERGE_MODE.entry(CUSTOM),
                    c.RECORD_MERGE_STRATEGY_ID.entry(self.strategy_id),
                ]
            )
        b = self.builtin
        assert b is not None
        out = dict(
            [
                c.RECORD_MERGE_MODE.entry(b.mode),
                c.RECORD_MERGE_STRATEGY_ID.entry(BUILTIN_STRATEGY_IDS[b.mode]),
            ]
        )
        if b.payload_class in (DEFAULT_PAYLOAD, OVERWRITE_LATEST_PAYLOAD):
            return out
        out[c.LEGACY_PAYLOAD_CLASS.key] = b.payload_class
        if b.partial != PARTIAL_NONE:
            out[PARTIAL_MODE_PROP] = b.partial
        if b.partial_marker:
            out[MERGE_PROPERTY_PREFIX + PARTIAL_MARKER_PROP] = b.partial_marker
        if b.delete_field and b.delete_marker and b.name == "aws_dms":
            # Java sets these for AWSDmsAvroPayload only (Debezium deletes come from the payload)
            out[MERGE_PROPERTY_PREFIX + DELETE_FIELD_PROP] = b.delete_field
            out[MERGE_PROPERTY_PREFIX + DELETE_MARKER_PROP] = b.delete_marker
        return out


def spec_for_mode(mode: MergeMode | str, ordering_fields: Sequence[str] = ()) -> MergeSpec:
    """The built-in spec of a merge mode (``COMMIT_TIME_ORDERING`` / ``EVENT_TIME_ORDERING``)."""
    if mode not in MODE_BEHAVIOUR:
        raise ConfigError(f"merge mode {str(mode)!r} has no built-in merger")
    return builtin_spec(MODE_BEHAVIOUR[mode], ordering_fields)


def builtin_spec(
    b: Behaviour, ordering_fields: Sequence[str] = (), payload: bool = False
) -> MergeSpec:
    """The spec of a built-in behaviour.

    Args:
        b: the behaviour.
        ordering_fields: the ordering (precombine) fields.
        payload: the table merges through ``b``'s payload class (a version-6 table, Java 0.x
            semantics; :attr:`MergeSpec.by_payload`).
    """
    return MergeSpec(
        mode=b.mode,
        behaviour=b.name,
        ordering_fields=tuple(ordering_fields),
        strategy_id=BUILTIN_STRATEGY_IDS[b.mode],
        payload_class=b.payload_class,
        by_payload=payload,
    )


# --------------------------------------------------------------------------------------------
# Custom mergers
# --------------------------------------------------------------------------------------------


def pick_custom_class(classes: Sequence[str], strategy_id: str | None) -> type[RecordMerger]:
    """The configured merger class implementing ``strategy_id`` (the only one if None).

    Raises:
        ConfigError: no class given, a class does not import, or none (or several, with no
            strategy id to choose) match.
    """
    key = WriteConfig.MERGE_CUSTOM_CLASSES.key
    if not classes:
        what = f" with strategy id {strategy_id}" if strategy_id else ""
        raise ConfigError(
            f"merge mode CUSTOM{what} needs option '{key}' (importable Python RecordMerger "
            "class paths)"
        )
    loaded = [load_merger_class(c, key) for c in classes]
    if strategy_id is None:
        if len(loaded) > 1:
            raise ConfigError(
                f"option '{key}' names {len(loaded)} mergers; set "
                f"'{WriteConfig.MERGE_STRATEGY_ID.key}' to choose one"
            )
        return loaded[0]
    for cls in loaded:
        if cls.strategy_id == strategy_id:
            return cls
    have = ", ".join(f"{c.__module__}.{c.__qualname__}={c.strategy_id}" for c in loaded)
    raise ConfigError(
        f"option '{WriteConfig.MERGE_STRATEGY_ID.key}'={strategy_id!r}: no class in "
        f"'{key}' has this strategy id ({have})"
    )


def custom_spec(
    classes: Sequence[str], strategy_id: str | None, ordering_fields: Sequence[str]
) -> MergeSpec:
    """A CUSTOM spec for the configured classes (validated by importing them)."""
    cls = pick_custom_class(classes, strategy_id)
    return MergeSpec(
        mode=CUSTOM,
        behaviour=None,
        ordering_fields=tuple(ordering_fields),
        strategy_id=cls.strategy_id,
        payload_class=DEFAULT_PAYLOAD if ordering_fields else OVERWRITE_LATEST_PAYLOAD,
        custom_classes=tuple(classes),
    )


# --------------------------------------------------------------------------------------------
# Resolution from write options and from a table's hoodie.properties
# --------------------------------------------------------------------------------------------


def custom_classes_option(options: Options) -> list[str]:
    """The ``hoodie.write.record.merge.custom.implementation.classes`` option (a list)."""
    raw: Any = options.get(WriteConfig.MERGE_CUSTOM_CLASSES)
    return [str(c) for c in raw or []]


def default_ordering_field(options: Options) -> str | None:
    """The ordering field a payload class implies when none is configured (Debezium)."""
    payload = options.get(WriteConfig.PAYLOAD_CLASS)
    if not payload:
        return None
    b = behaviour_of_payload(payload, WriteConfig.PAYLOAD_CLASS.key)
    return b.default_ordering


def write_spec(options: Options, ordering_field: str | None) -> MergeSpec:
    """The merge spec a write asks for, validated (for a table being created).

    Raises:
        ConfigError: unknown payload class, contradicting mode/payload/strategy options,
            EVENT_TIME_ORDERING without an ordering field, or CUSTOM without a loadable merger
            (the message names the key and the value).
    """
    mode_option: str | None = options.get(WriteConfig.MERGE_MODE)
    mode = MergeMode(mode_option) if mode_option is not None else None
    payload: str | None = options.get(WriteConfig.PAYLOAD_CLASS)
    strategy: str | None = options.get(WriteConfig.MERGE_STRATEGY_ID)
    classes = custom_classes_option(options)
    ordering = (ordering_field,) if ordering_field else ()
    mode_key, payload_key = WriteConfig.MERGE_MODE.key, WriteConfig.PAYLOAD_CLASS.key
    strategy_key = WriteConfig.MERGE_STRATEGY_ID.key

    implied: MergeMode | None = None
    if strategy:
        strategy = strategy.strip()
        if strategy == COMMIT_TIME_STRATEGY_ID:
            implied = COMMIT_TIME_ORDERING
        elif strategy == EVENT_TIME_STRATEGY_ID:
            implied = None if payload else EVENT_TIME_ORDERING
        elif strategy == PAYLOAD_BASED_STRATEGY_ID:
            if not payload:
                raise ConfigError(
                    f"option '{strategy_key}'={strategy!r} (payload based) needs '{payload_key}'"
                )
        else:
            implied = CUSTOM
    if mode is None:
        mode = implied
    elif implied is not None and implied != mode:
        raise ConfigError(
            f"option '{strategy_key}'={strategy!r} contradicts option '{mode_key}'={mode_option!r}"
        )
    if mode is None and classes and not payload:
        mode = CUSTOM

    if mode == CUSTOM:
        if payload:
            raise ConfigError(
                f"option '{payload_key}'={payload!r} cannot be combined with "
                f"'{mode_key}'=CUSTOM: hudi_ds runs Python RecordMergers, not Java payloads"
            )
        return custom_spec(classes, strategy, ordering)

    if payload:
        b = behaviour_of_payload(payload, payload_key)
        if mode is not None and mode != b.mode:
            raise ConfigError(
                f"option '{payload_key}'={payload!r} merges by {b.mode}, which contradicts "
                f"option '{mode_key}'={mode.value!r}"
            )
        if not ordering and b.default_ordering:
            ordering = (b.default_ordering,)
    else:
        if mode is None:
            mode = EVENT_TIME_ORDERING if ordering else COMMIT_TIME_ORDERING
        b = MODE_BEHAVIOUR[mode]
    if b.mode == EVENT_TIME_ORDERING and not ordering:
        what = (
            f"option '{payload_key}'={payload!r} orders by event time and"
            if payload
            else f"option '{mode_key}'=EVENT_TIME_ORDERING"
        )
        raise ConfigError(
            f"{what} needs an ordering field (hoodie.datasource.write.precombine.field)"
        )
    # chosen by payload class: the writer names one, or names no merge mode or strategy id
    # (Java 0.x writers then take OverwriteWithLatestAvroPayload / DefaultHoodieRecordPayload)
    by_payload = bool(payload) or (mode_option is None and not strategy)
    return builtin_spec(b, ordering, payload=by_payload)


def table_spec(cfg: TableConfig, custom_classes: Sequence[str] | None = None) -> MergeSpec:
    """How the table in ``cfg`` merges (its ``hoodie.properties``), for readers and writers.

    Args:
        cfg: the table config.
        custom_classes: Python merger class paths (``CUSTOM`` tables need them).

    Raises:
        ConfigError: a ``CUSTOM`` table read or written without a matching merger class.
    """
    mode = cfg.merge_mode
    ordering = tuple(cfg.ordering_fields)
    payload = cfg.payload_class or cfg.get(TableConfig.LEGACY_PAYLOAD_CLASS)
    strategy = cfg.merge_strategy_id
    b = BY_PAYLOAD.get(payload or "")
    through_payload = merges_through_payload(cfg)
    if mode == CUSTOM:
        payload_based = strategy in (None, "", PAYLOAD_BASED_STRATEGY_ID)
        if b is not None and payload_based:
            return builtin_spec(b, ordering)
        if payload_based and not custom_classes:
            raise ConfigError(
                f"the table merges with payload class {payload!r}, which hudi_ds does not "
                f"implement; set '{WriteConfig.MERGE_CUSTOM_CLASSES.key}' to a Python "
                "RecordMerger that does the same"
            )
        return custom_spec(
            list(custom_classes or []), None if payload_based else strategy, ordering
        )
    if b is not None and b.mode == mode:
        return builtin_spec(b, ordering, payload=through_payload)
    if (cfg.get(TableConfig.PARTIAL_UPDATE_MODE) or "").upper() == IGNORE_DEFAULTS:
        # Hudi 1.1 tables: the partial update mode is a table property of its own
        name = "partial_update" if mode == EVENT_TIME_ORDERING else "overwrite_non_defaults"
        return builtin_spec(BEHAVIOURS[name], ordering)
    if mode == COMMIT_TIME_ORDERING and not payload and through_payload:
        # a version-6 table recording no payload class: Java 0.x writers merge with theirs,
        # OverwriteWithLatestAvroPayload by default (hoodie.datasource.write.payload.class)
        return builtin_spec(MODE_BEHAVIOUR[mode], ordering, payload=True)
    return spec_for_mode(mode, ordering)


def merges_through_payload(cfg: TableConfig) -> bool:
    """Whether Java merges the table in ``cfg`` through its payload class (0.x semantics).

    True for a version-6 table that records neither a merge mode nor the commit-time strategy
    id (``hoodie.properties`` of Hudi 0.x, and of the tables hudi_ds creates): Java 0.x merges
    through the payload (``HoodieAvroRecordMerger``). Tables of version 8 and later, or
    recording ``hoodie.record.merge.mode`` / the commit-time strategy, merge by their mode as in
    Java 1.x (``COMMIT_TIME_ORDERING``: the later version wins, within a batch too).
    """
    return (
        cfg.table_version < 8
        and not cfg.get(TableConfig.RECORD_MERGE_MODE)
        and cfg.merge_strategy_id != COMMIT_TIME_STRATEGY_ID
    )


def check_same_spec(options: Options, table: MergeSpec) -> None:
    """Refuse write options that would change an existing table's merge choice.

    Raises:
        ConfigError: the merge mode, payload class or strategy id differs from the table's
            (names the key, the value and the table's value).
    """
    mode = options.get(WriteConfig.MERGE_MODE)
    if mode is not None and mode != table.mode:
        raise ConfigError(
            f"option '{WriteConfig.MERGE_MODE.key}'={mode!r} contradicts the table's merge mode "
            f"{table.mode} (set at creation; it cannot change)"
        )
    payload = options.get(WriteConfig.PAYLOAD_CLASS)
    if payload:
        b = behaviour_of_payload(payload, WriteConfig.PAYLOAD_CLASS.key)
        if b.name != table.behaviour:
            raise ConfigError(
                f"option '{WriteConfig.PAYLOAD_CLASS.key}'={payload!r} contradicts the table's "
                f"merge choice ({table.payload_class if not table.is_custom else 'CUSTOM'}; "
                "set at creation, it cannot change)"
            )
    strategy = options.get(WriteConfig.MERGE_STRATEGY_ID)
    if strategy and strategy.strip() != table.strategy_id:
        raise ConfigError(
            f"option '{WriteConfig.MERGE_STRATEGY_ID.key}'={strategy!r} contradicts the table's "
            f"merge strategy {table.strategy_id} (set at creation; it cannot change)"
        )

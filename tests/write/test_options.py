"""The options of a write resolved against the table (hudi_ds/write/options.py)."""

from __future__ import annotations

import importlib.util

import pytest

from hudi_ds.config import Options
from hudi_ds.errors import ConfigError, UnsupportedError
from hudi_ds.layout.bloom_filter import BloomFilterSpec
from hudi_ds.table_config import TableConfig
from hudi_ds.write.options import resolve_options

TABLE_PROPS = {
    "hoodie.table.name": "t",
    "hoodie.table.type": "COPY_ON_WRITE",
    "hoodie.table.version": "6",
    "hoodie.table.recordkey.fields": "id",
}
BLOOM_OPTIONS = {
    "hoodie.bloom.index.filter.type": "SIMPLE",
    "hoodie.index.bloom.num_entries": "1000",
    "hoodie.index.bloom.fpp": "0.001",
}


def test_bloom_filter_of_new_base_files() -> None:
    o = Options.of(BLOOM_OPTIONS)
    want = BloomFilterSpec("SIMPLE", 1000, 0.001, 100000)
    assert resolve_options(o, None).bloom == want  # a new table has meta fields
    assert resolve_options(o, TableConfig(dict(TABLE_PROPS))).bloom == want
    assert resolve_options(Options.of({}), None).bloom == BloomFilterSpec()


def test_no_bloom_filter_without_meta_fields() -> None:
    # as Java: the files of a table with hoodie.populate.meta.fields=false have no key footers
    cfg = TableConfig({**TABLE_PROPS, "hoodie.populate.meta.fields": "false"})
    r = resolve_options(Options.of(BLOOM_OPTIONS), cfg)
    assert r.bloom is None and r.populate_meta_fields is False
    # a new table asks for it with the option
    new = resolve_options(
        Options.of({**BLOOM_OPTIONS, "hoodie.populate.meta.fields": "false"}), None
    )
    assert new.bloom is None and new.populate_meta_fields is False


def test_populate_meta_fields_option_against_the_table() -> None:
    """An existing table keeps its own: virtual keys are not re-enabled (Java
    HoodieTableMetaClient.validateTableProperties) nor turned on over files holding keys."""
    without = TableConfig({**TABLE_PROPS, "hoodie.populate.meta.fields": "false"})
    with_meta = TableConfig(dict(TABLE_PROPS))
    for cfg, asked in ((without, "true"), (with_meta, "false")):
        with pytest.raises(ConfigError, match=f"'hoodie.populate.meta.fields'={asked.title()}"):
            resolve_options(Options.of({"hoodie.populate.meta.fields": asked}), cfg)
    agreed = Options.of({"hoodie.populate.meta.fields": "false"})
    assert resolve_options(agreed, without).populate_meta_fields is False
    assert resolve_options(Options.of({}), with_meta).populate_meta_fields is True


# -- key generators and properties an existing table does not record ---------------------
SIMPLE_KG = "org.apache.hudi.keygen.SimpleKeyGenerator"
COMPLEX_KG = "org.apache.hudi.keygen.ComplexKeyGenerator"
KG_OPTION = "hoodie.datasource.write.keygenerator.class"
PARTITIONED_PROPS = {
    **TABLE_PROPS,
    "hoodie.table.partition.fields": "p",
    "hoodie.table.keygenerator.class": SIMPLE_KG,
}


def test_key_generator_option_against_the_table() -> None:
    cfg = TableConfig(dict(PARTITIONED_PROPS))
    with pytest.raises(ConfigError, match=f"{KG_OPTION}.*ComplexKeyGenerator.*{SIMPLE_KG}"):
        resolve_options(Options.of({KG_OPTION: COMPLEX_KG}), cfg)
    # the Avro twin builds the same keys
    avro = "org.apache.hudi.keygen.SimpleAvroKeyGenerator"
    assert not resolve_options(Options.of({KG_OPTION: avro}), cfg).keys.complex_key
    # Java refuses SimpleKeyGenerator on a non-partitioned table (validateKeyGeneratorConfig)
    nonpart = TableConfig(
        {
            **TABLE_PROPS,
            "hoodie.table.keygenerator.class": "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
        }
    )
    with pytest.raises(ConfigError, match="SimpleKeyGenerator.*NonpartitionedKeyGenerator"):
        resolve_options(Options.of({KG_OPTION: SIMPLE_KG}), nonpart)
    # a table that does not record its key generator takes the writer's
    assert resolve_options(
        Options.of({KG_OPTION: COMPLEX_KG}), TableConfig(dict(TABLE_PROPS))
    ).keys.complex_key


def test_key_generator_option_of_a_new_table() -> None:
    base = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id"}
    parted = {**base, "hoodie.datasource.write.partitionpath.field": "p"}
    # ComplexKeyGenerator writes f:v keys even for one field
    assert resolve_options(Options.of({**parted, KG_OPTION: COMPLEX_KG}), None).keys.complex_key
    assert not resolve_options(Options.of({**parted, KG_OPTION: SIMPLE_KG}), None).keys.complex_key
    with pytest.raises(ConfigError, match="not supported for a new table"):
        resolve_options(
            Options.of({**parted, KG_OPTION: "org.apache.hudi.keygen.NonpartitionedKeyGenerator"}),
            None,
        )
    # TIMESTAMP needs its timestamp type, CUSTOM the type of each partition field
    with pytest.raises(ConfigError, match="'hoodie.keygen.timebased.timestamp.type' is required"):
        resolve_options(
            Options.of({**parted, KG_OPTION: "org.apache.hudi.keygen.TimestampBasedKeyGenerator"}),
            None,
        )
    with pytest.raises(ConfigError, match="partition field 'p' of the CUSTOM key generator"):
        resolve_options(
            Options.of({**parted, KG_OPTION: "org.apache.hudi.keygen.CustomKeyGenerator"}), None
        )


def test_unrecorded_partition_fields_of_a_partitioning_table() -> None:
    cfg = TableConfig(
        {k: v for k, v in PARTITIONED_PROPS.items() if k != "hoodie.table.partition.fields"}
    )
    with pytest.raises(
        ConfigError, match="'hoodie.datasource.write.partitionpath.field' is required"
    ):
        resolve_options(Options.of({}), cfg)
    r = resolve_options(Options.of({"hoodie.datasource.write.partitionpath.field": "p"}), cfg)
    assert r.keys.partition_fields == ("p",)
    # a table that records its partition fields refuses others, naming both
    with pytest.raises(ConfigError, match=r"\['q'\].*\['p'\]"):
        resolve_options(
            Options.of({"hoodie.datasource.write.partitionpath.field": "q"}),
            TableConfig(dict(PARTITIONED_PROPS)),
        )


@pytest.mark.parametrize("version", ["5", "7", "10"])
def test_table_version_other_than_6_8_9_refused(version: str) -> None:
    cfg = TableConfig({**TABLE_PROPS, "hoodie.table.version": version})
    with pytest.raises(ConfigError, match=f"writes table versions 6, 8, 9.*version {version}"):
        resolve_options(Options.of({}), cfg, "/x")


@pytest.mark.parametrize(("version", "layout"), [("6", "2"), ("8", "1"), ("9", "1")])
def test_table_version_with_foreign_timeline_layout_refused(version: str, layout: str) -> None:
    cfg = TableConfig(
        {**TABLE_PROPS, "hoodie.table.version": version, "hoodie.timeline.layout.version": layout}
    )
    with pytest.raises(ConfigError, match=f"version {version} with timeline layout {layout}"):
        resolve_options(Options.of({}), cfg, "/x")


@pytest.mark.parametrize("version", ["8", "9"])
def test_versions_8_and_9_resolve_with_their_key_generator_type(version: str) -> None:
    props = {
        **TABLE_PROPS,
        "hoodie.table.version": version,
        "hoodie.timeline.layout.version": "2",
        "hoodie.table.recordkey.fields": "id,name",
        "hoodie.table.partition.fields": "p",
        "hoodie.table.keygenerator.type": "COMPLEX",
        "hoodie.record.merge.mode": "EVENT_TIME_ORDERING",
        "hoodie.table.ordering.fields": "ts",
    }
    r = resolve_options(Options.of({}), TableConfig(props), "/x")
    assert (r.keys.complex_key, r.merge.ordering_field, r.merge.mode) == (
        True,
        "ts",
        "EVENT_TIME_ORDERING",
    )
    # a single key field under COMPLEX is still f:v (the type decides, not the field count)
    one = {**props, "hoodie.table.recordkey.fields": "id"}
    assert resolve_options(Options.of({}), TableConfig(one), "/x").keys.complex_key
    with pytest.raises(
        UnsupportedError, match=r"key generator GLOBAL_DELETE \(hoodie.table.keygenerator.type\)"
    ):
        resolve_options(
            Options.of({}),
            TableConfig({**props, "hoodie.table.keygenerator.type": "GLOBAL_DELETE"}),
            "/x",
        )
    # CUSTOM (its Avro twin alike) takes the field types the table records, else the writer's
    custom = {**props, "hoodie.table.keygenerator.type": "CUSTOM_AVRO"}
    with pytest.raises(ConfigError, match="records its partition fields \\['p'\\] without"):
        resolve_options(Options.of({}), TableConfig(custom), "/x")
    typed = {**custom, "hoodie.table.partition.fields": "p:SIMPLE"}
    keys = resolve_options(Options.of({}), TableConfig(typed), "/x").keys
    assert (keys.partition_fields, keys.complex_key, keys.timestamp) == (("p",), True, None)


def test_non_native_table_format_and_orc_refused() -> None:
    v9 = {**TABLE_PROPS, "hoodie.table.version": "9"}
    with pytest.raises(UnsupportedError, match="hoodie.table.format=iceberg"):
        resolve_options(Options.of({}), TableConfig({**v9, "hoodie.table.format": "iceberg"}))
    with pytest.raises(UnsupportedError, match="ORC base files"):
        resolve_options(Options.of({}), TableConfig({**v9, "hoodie.table.base.file.format": "ORC"}))


def test_lance_base_files_refused_naming_pylance(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lance base files are written with the optional pylance, refused without it."""
    from tests.write.test_lance_writes import without_pylance

    cfg = TableConfig(
        {**TABLE_PROPS, "hoodie.table.version": "9", "hoodie.table.base.file.format": "LANCE"}
    )
    if importlib.util.find_spec("lance") is not None:
        assert resolve_options(Options.of({}), cfg, "/x").base_file_format == "LANCE"
        with pytest.raises(ConfigError, match="hoodie.table.base.file.format.*contradicts"):
            resolve_options(Options.of({"hoodie.table.base.file.format": "PARQUET"}), cfg, "/x")
    without_pylance(monkeypatch)
    with pytest.raises(UnsupportedError, match="LANCE.*'pylance'"):
        resolve_options(Options.of({}), cfg, "/x")


@pytest.mark.parametrize(
    ("index", "options", "unused"),
    [
        (
            "BUCKET",
            {"hoodie.parquet.max.file.size": "1000", "hoodie.bloom.index.prune.by.ranges": "false"},
            ["hoodie.bloom.index.prune.by.ranges", "hoodie.parquet.max.file.size"],
        ),
        (
            "SIMPLE",
            {
                "hoodie.parquet.max.file.size": "1000",
                "hoodie.simple.index.update.partition.path": "false",
            },
            ["hoodie.simple.index.update.partition.path"],
        ),
        ("GLOBAL_SIMPLE", {"hoodie.simple.index.update.partition.path": "false"}, []),
        ("BLOOM", {"hoodie.bloom.index.prune.by.ranges": "false"}, []),
        (  # the resizes' options, on the SIMPLE bucket engine
            "BUCKET",
            {
                "hoodie.bucket.index.merge.threshold": "0.5",
                "hoodie.bucket.index.min.num.buckets": "2",
            },
            ["hoodie.bucket.index.merge.threshold", "hoodie.bucket.index.min.num.buckets"],
        ),
        (
            "BUCKET",
            {
                "hoodie.index.bucket.engine": "CONSISTENT_HASHING",
                "hoodie.datasource.write.table.type": "MERGE_ON_READ",
                "hoodie.bucket.index.merge.threshold": "0.5",
                "hoodie.parquet.max.file.size": "1000",
            },
            [],
        ),
    ],
)
def test_options_the_index_does_not_use_are_warned_about(
    index: str, options: dict[str, str], unused: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    o = Options.of(
        {
            "hoodie.table.name": "t",
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.index.type": index,
            **options,
        }
    )
    with caplog.at_level("WARNING", logger="hudi_ds.write"):
        resolved = resolve_options(o, None)
    assert resolved.index.type == index
    warned = sorted(
        r.args[0] for r in caplog.records if "has no effect" in r.getMessage() and r.args
    )
    assert warned == sorted(unused)
    for key in unused:
        assert any(key in r.getMessage() and index in r.getMessage() for r in caplog.records)


def test_write_table_version_of_an_existing_table_must_match() -> None:
    """The option picks a new table's version; an existing table keeps its own (hudi_ds does
    not upgrade or downgrade), and a different value is refused naming both."""
    cfg = TableConfig(dict(TABLE_PROPS))
    resolve_options(Options.of({"hoodie.write.table.version": "6"}), cfg, "/x")
    with pytest.raises(ConfigError, match=r"'hoodie.write.table.version'=9 contradicts.*\(6 in"):
        resolve_options(Options.of({"hoodie.write.table.version": "9"}), cfg, "/x")
    with pytest.raises(ConfigError, match="hoodie.write.table.version.*expected 6, 8 or 9"):
        resolve_options(Options.of({"hoodie.write.table.version": "7"}), None)

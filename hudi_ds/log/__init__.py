"""Hudi log files: block framing (:mod:`.block`), scanning and decoding (:mod:`.reader`),
encoding (:mod:`.writer`). Pure byte handling: file IO belongs to :mod:`hudi_ds.storage`.
"""

from hudi_ds.log.block import MAGIC, BlockType, HeaderKey, LogBlock, encode_block, parse_block
from hudi_ds.log.reader import (
    LogScan,
    decode_data_block,
    decode_data_blocks,
    decode_delete_block,
    decode_hfile_block,
    scan_log_bytes,
)
from hudi_ds.log.writer import (
    encode_avro_data_block,
    encode_avro_records,
    encode_delete_block,
    encode_empty_delete_block,
    encode_hfile_data_block,
    encode_parquet_data_block,
    encode_rollback_command_block,
)

__all__ = [
    "MAGIC",
    "BlockType",
    "HeaderKey",
    "LogBlock",
    "LogScan",
    "decode_data_block",
    "decode_data_blocks",
    "decode_delete_block",
    "decode_hfile_block",
    "encode_avro_data_block",
    "encode_avro_records",
    "encode_block",
    "encode_delete_block",
    "encode_empty_delete_block",
    "encode_hfile_data_block",
    "encode_parquet_data_block",
    "encode_rollback_command_block",
    "parse_block",
    "scan_log_bytes",
]

"""File layout: file names, partition paths, file groups and file slices, Parquet files."""

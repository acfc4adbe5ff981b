"""The table: file-system view, reader and the ``ReadableTable`` facade."""

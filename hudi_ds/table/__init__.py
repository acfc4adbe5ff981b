"""The table: file-system view, reader and the ``HudiTable`` facade."""

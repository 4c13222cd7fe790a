"""A minimal stand-in for the `safetensors` package (save_file only), for machines whose python3
has torch but not safetensors (Debian's python3-torch has no safetensors package). The format:
8-byte little-endian header length, a JSON header {name: {dtype, shape, data_offsets}}, raw
little-endian data. Put this folder on PYTHONPATH only when the real package is missing."""

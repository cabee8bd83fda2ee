"""The data path: readers, formats and the steps a record passes through, up to the shards.

It imports only pipeline.core (tests/core/test_layering.py)."""

"""The core every wing may import: settings, errors, the step contract, records, stats, I/O helpers.

It imports nothing from the wings (tests/core/test_layering.py)."""

"""Test plugin: with this folder on PYTHONPATH and PREPARE_TEST_SLOW_SHARDS=<seconds>, every shard result is
saved that much later, in the main process and in spawned pool workers alike (each imports sitecustomize at
start), so a test can interrupt a run between shards. The library itself has no such hook."""
import os

_delay = os.environ.get("PREPARE_TEST_SLOW_SHARDS")
if _delay:
    import time

    from pipeline.runner import resume as _resume

    _save = _resume.save

    def _slow_save(*args, **kwargs):
        time.sleep(float(_delay))
        return _save(*args, **kwargs)

    _resume.save = _slow_save

"""prepare: training data for LLM fine-tuning, and the GPU it needs, decided on a CPU.

The package is arranged in wings; each imports only the wings listed after it (tests/core/test_layering.py checks
this, with no import cycles and no private name imported across modules):

- core     settings (config), errors, the Step contract, records, stats, I/O helpers (files, s3), resources
- data     the data path: readers, formats and the steps a record passes through, up to the shards  -> core
- plan     the GPU plan: memory estimator, tracer, GPU choice                                       -> core
- report   report.json, report.md and report.html                                                    -> core, data, plan
- train    the trainer hand-off: emitted configs, checkpoints, the calibration trial                 -> core, plan
- runner   a run: phases, executor, resume, the run directory, preflight, precheck                   -> all above
- cli      the `prepare` command                                                                     -> all above

The library never imports Prefect or flows/: front ends plug in through entry points (pyproject.toml).
"""

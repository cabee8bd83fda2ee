"""The GPU plan, on a CPU: model architectures (models), the training set-up and framework presets (setup), the
analytical VRAM estimate (memory), the traced check of it (trace), measured trials (measured), the GPU choice
with time and cost (gpus) and the sampled pre-check that feeds them (precheck)."""

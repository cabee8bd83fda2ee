"""The VRAM of one training step, traced from the real training code (`prepare estimate --trace`).

The analytical model (pipeline/plan/memory.py) sums terms fitted to a few published peaks; this module runs the code
a GPU job would run instead, on the meta device (tensors with a shape and a dtype but no data, so an 8B model
costs no memory and a step runs in seconds on a CPU): transformers builds the model from its config.json, PEFT
wraps it, the forward pass, the HF loss (logits upcast to fp32), the backward pass, gradient clipping and the
optimizer step run as the HF Trainer runs them. A TorchDispatchMode sees every tensor an operator returns and
counts its storage once (views share it), and a weakref finalizer on the storage sees it freed, so the peak of
live bytes is exact for that code path: the figure torch.cuda.max_memory_allocated() gives, less what no trace
shows (cuBLAS / FlashAttention workspaces, fused kernels' internals, NCCL buffers).

Where the trace cannot run the real thing, it stands in for it, and the result says so:
- autocast: torch has no autocast on the meta device. The Trainer's bf16 autocast is emulated by a
  TorchFunctionMode with autocast's CUDA op lists (matmuls and SDPA in bf16, softmax/norms/losses in fp32) and
  its weight-cast cache (casts of trained leaf tensors live until the autocast region ends);
- QLoRA: bitsandbytes' kernels need CUDA. Each quantized linear holds its weight as one uint8 storage of the NF4
  size (4-bit codes + absmax constants, as pipeline.plan.memory counts them) and dequantizes to a bf16 temporary of
  the full weight in forward and again in backward, saving nothing else, as bitsandbytes' MatMul4Bit does;
- the fused AdamW kernel (the Trainer's default optimizer) runs as torch's meta kernel; its device check is
  bypassed for meta tensors;
- transformers' packed-sequence detection reads tensor values; the trace feeds one unpadded sequence per row, the
  case in which that check finds no packing, and skips it.

torch is imported only by the modules that trace (build, stand_ins, tracker, steps), and run.trace_step imports
those only when it runs: `prepare estimate` without --trace never imports torch.

Each trace keeps its state in objects it creates and passes along (its Tracker, its autocast emulation), so two
traces in one process share nothing.

Modules (callers import from the one that owns the name; this package exports nothing itself):
  run           trace_step, TraceResult, trace_available, INSTALL_HINT: the entry point
  model_config  hf_config_dict: the config.json of a model (no torch)
  build         the model as the stack builds it: transformers on the meta device, PEFT, the QLoRA preparation
  stand_ins     what stands in where the meta device cannot run the real thing (autocast, NF4, attention, loss)
  steps         the two traced training steps and their phases
  tracker       the live-bytes accounting: every storage counted once, its frees seen, the peak replayed
"""

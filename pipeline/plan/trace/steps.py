"""The two traced training steps (the second is the steady state: optimizer states exist from the first), as the
HF Trainer runs them: forward with the loss of the stack (LOSS_PATHS), backward, gradient clipping, the optimizer
step; hooks name the phase each storage is made in."""
from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch

from pipeline.plan.trace.build import CE_CHUNKS
from pipeline.plan.trace.stand_ins import Autocast, FusedLinearCrossEntropy
from pipeline.plan.trace.tracker import Replay, Tracker, replay


@dataclass(frozen=True)
class TracedSteps:
    """What the second step held: its replay, the live bytes per category at its peak and at its forward end, and
    the steady-state sizes (parameters, gradients, optimizer state)."""
    replay: Replay
    at_peak: dict[str, int]
    at_forward_end: dict[str, int]
    sizes: dict[str, int]


def run_steps(built: dict, tracker: Tracker, autocast: Autocast, seq_len: int, micro_batch: int,
              optimizer: str) -> TracedSteps:
    """Two training steps of the built model under this trace's tracker and autocast emulation."""
    model, trainable = built["model"], built["trainable"]
    for t in list(model.parameters()) + list(model.buffers()):
        tracker.key(t)
    tracker.param_keys.update(tracker.key(t) for t in list(model.parameters()) + list(model.buffers()))

    def grad_seen(p):
        tracker.grad_keys.add(tracker.key(p.grad))

    handles = [p.register_post_accumulate_grad_hook(grad_seen) for p in trainable]
    handles += _phase_hooks(built, tracker, autocast)
    opt, opt_path = _optimizer(optimizer, trainable)
    built["code_path"].append(f"{opt_path}; clip_grad_norm_ 1.0; zero_grad(set_to_none); two steps traced, "
                              f"the second reported")
    ids = torch.zeros(micro_batch, seq_len, dtype=torch.long, device="meta")
    starts, forward_end = [], []
    with tracker, autocast:
        tracker.key(ids)
        for step in range(2):
            starts.append(len(tracker.events))
            tracker.set_phase("forward")
            with autocast.region(built["autocast"], fresh=True):
                loss, kept = forward_loss(model, ids, built, autocast, tracker)
            forward_end.append(len(tracker.events))
            tracker.set_phase("backward, loss")
            loss.backward()
            del loss, kept
            tracker.set_phase("optimizer step")
            torch.nn.utils.clip_grad_norm_(trainable, 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            for state in opt.state.values():
                for value in state.values():
                    k = tracker.key(value)
                    if k is not None:
                        tracker.state_keys.add(k)
            tracker.set_phase("setup")
    for h in handles:
        h.remove()

    second = replay(tracker, starts[1], forward_end[1])
    sizes = {"parameters": sum(tracker.size[k] for k in tracker.param_keys),
             "trainable_parameters": sum(tracker.size[tracker.key(p)] for p in trainable),
             "gradients": sum(tracker.size[tracker.key(p)] for p in trainable),  # one grad per trainable param
             "optimizer_state": sum(tracker.size[k] for k in tracker.state_keys)}
    return TracedSteps(second, tracker.split(second.peak_live), tracker.split(second.end_live), sizes)


def _phase_hooks(built: dict, tracker: Tracker, autocast: Autocast) -> list:
    """Phases: layer hooks outside the checkpoint in forward; the checkpoint function itself for the recompute;
    a hook on each layer's output gradient for the layer's backward; the output head for the loss."""
    model, layers = built["model"], built["layers"]
    handles = []

    def pre_hook(i):
        def hook(module, args):
            if not tracker.phases[tracker.phase].startswith("backward"):
                tracker.set_phase(f"forward, layer {i}")
        return hook

    def post_hook(i):
        def hook(module, args, output):
            out = output[0] if isinstance(output, tuple) else output
            if isinstance(out, torch.Tensor) and out.requires_grad \
                    and not tracker.phases[tracker.phase].startswith("backward"):
                out.register_hook(lambda g: (tracker.set_phase(f"backward, layer {i}"), None)[1])
                tracker.set_phase("forward")
        return hook

    for i, layer in enumerate(layers):
        handles.append(layer.register_forward_pre_hook(pre_hook(i)))
        handles.append(layer.register_forward_hook(post_hook(i)))
        if built["grad_ckpt"] and hasattr(layer, "_gradient_checkpointing_func"):
            layer._gradient_checkpointing_func = wrap_checkpoint(layer._gradient_checkpointing_func, i, tracker,
                                                                 autocast)
    head = model.get_output_embeddings()

    def head_pre(module, args):
        tracker.set_phase("loss (lm_head + cross-entropy)")

    def head_post(module, args, output):
        if output.requires_grad:
            output.register_hook(lambda g: (tracker.set_phase("backward, lm_head"), None)[1])

    handles += [head.register_forward_pre_hook(head_pre), head.register_forward_hook(head_post)]
    return handles


def _optimizer(optimizer: str, trainable: list):
    """The optimizer the Trainer would build, and its line of the code path."""
    if optimizer == "sgd":
        opt = torch.optim.SGD(trainable, lr=1e-4)
        opt_path = "torch SGD (no state)"
    elif optimizer == "adamw_foreach":
        opt = torch.optim.AdamW(trainable, lr=1e-4, foreach=True)
        opt_path = "torch AdamW foreach"
    else:
        opt = torch.optim.AdamW(trainable, lr=1e-4, fused=True)
        opt_path = "torch AdamW fused (the Trainer's default adamw_torch_fused)"
    return opt, opt_path


def forward_loss(model, ids, built: dict, autocast: Autocast, tracker: Tracker):
    """The forward pass and the loss of the traced stack (LOSS_PATHS); returns (loss, what the loop keeps
    referenced until the backward pass is done)."""
    F = torch.nn.functional
    path = built["cross_entropy"]
    if path == "standard":
        return model(input_ids=ids, labels=ids).loss, None
    causal = model.get_base_model() if hasattr(model, "get_base_model") else model
    labels = F.pad(ids, (0, 1), value=-100)[..., 1:]  # each token predicts the next, as the HF loss shifts
    if path == "bf16":
        logits = model(input_ids=ids).logits
        with autocast.region(False, fresh=False):
            loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), labels.reshape(-1))
        return loss, logits
    hidden = causal.get_decoder()(input_ids=ids).last_hidden_state
    head = causal.get_output_embeddings()
    cap = getattr(built["config"], "final_logit_softcapping", None)
    if path == "chunked":
        chunks = []
        for part in hidden.tensor_split(CE_CHUNKS, dim=1):
            logits = head(part)
            chunks.append(torch.tanh(logits / cap) * cap if cap else logits)
        total = None
        for logits, part in zip(chunks, labels.tensor_split(CE_CHUNKS, dim=1)):
            ce = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), part.reshape(-1), reduction="sum")
            total = ce if total is None else total + ce
        return total / labels.numel(), None  # the recipe deletes the chunk logits before backward
    tracker.set_phase("loss (lm_head + cross-entropy)")
    with autocast.region(False, fresh=False):
        flat = hidden.reshape(-1, hidden.shape[-1])
        return FusedLinearCrossEntropy.apply(flat, head.weight, labels.reshape(-1)), None


def wrap_checkpoint(checkpoint_func, index: int, tracker: Tracker, autocast: Autocast):
    """The layer's checkpoint function runs the layer in forward and again in backward (the recompute): the
    recompute gets the autocast state of the forward and a fresh cast cache, as torch.utils.checkpoint does."""
    def run_checkpointed(function, *args, **kwargs):
        forward_autocast = autocast.enabled

        def layer_forward(*inner_args, **inner_kwargs):
            phase = tracker.phases[tracker.phase]
            if phase.startswith("backward"):
                tracker.set_phase(f"backward, layer {index} (recompute)")
                # the autograd engine runs the recompute without the torch-function mode stack: enter it again
                mode = autocast if torch._C._len_torch_function_stack() == 0 else contextlib.nullcontext()
                try:  # the recompute stops early by raising once it has what backward needs
                    with mode, autocast.region(forward_autocast, fresh=True):
                        return function(*inner_args, **inner_kwargs)
                finally:
                    tracker.set_phase(f"backward, layer {index}")
            return function(*inner_args, **inner_kwargs)

        return checkpoint_func(layer_forward, *args, **kwargs)

    return run_checkpointed

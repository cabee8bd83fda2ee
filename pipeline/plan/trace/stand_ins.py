"""What stands in where the meta device cannot run the real thing (the package doc lists each, and the result
says so): torch.autocast (emulated), bitsandbytes' NF4 linears, FlashAttention's memory, CUDA dropout, Liger's fused
linear cross-entropy, and the two checks bypassed for the duration of a trace."""
from __future__ import annotations

import contextlib
import math
import types

import torch
import torch.optim.adam as adam
import transformers.masking_utils as masking
from torch.overrides import TorchFunctionMode
from transformers import AttentionInterface
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, flash_attention_mask
from transformers.utils import logging

F = torch.nn.functional
T = torch.Tensor
_LOWER = {getattr(torch, "_grouped_mm", F.linear), getattr(F, "grouped_mm", F.linear), F.linear, torch.matmul,
          T.matmul, T.__matmul__, T.__rmatmul__, torch.mm, T.mm, torch.bmm, T.bmm,
          torch.baddbmm, T.baddbmm, torch.addmm, T.addmm, torch.addbmm, torch.addmv, torch.mv, T.mv,
          F.scaled_dot_product_attention, torch.conv1d, torch.conv2d, F.conv1d, F.conv2d, torch.chain_matmul,
          torch.prelu}
_FP32 = {F.softmax, torch.softmax, T.softmax, F.log_softmax, torch.log_softmax, T.log_softmax, F.cross_entropy,
         F.nll_loss, F.layer_norm, torch.layer_norm, F.group_norm, torch.exp, T.exp, torch.log, T.log, torch.pow,
         T.pow, T.__pow__, torch.rsqrt, T.rsqrt, torch.sum, T.sum, torch.cumsum, T.cumsum, torch.prod, T.prod,
         torch.norm, T.norm, F.softplus, F.mse_loss, F.binary_cross_entropy_with_logits, F.kl_div,
         torch.reciprocal, T.reciprocal, F.normalize, torch.logsumexp, T.logsumexp}
_LOW_DTYPES = (torch.float16, torch.bfloat16)
_SDPA = {F.scaled_dot_product_attention}
_DROPOUT = {F.dropout, torch.dropout}


class Autocast(TorchFunctionMode):
    """torch.autocast('cuda', torch.bfloat16) at the torch-function level, with autocast's cache: the bf16
    cast of a leaf tensor that requires grad (a trained weight) is reused until the region ends."""

    def __init__(self):
        super().__init__()
        self.enabled = False
        self.cache: dict[int, tuple] = {}

    @contextlib.contextmanager
    def region(self, enabled: bool, fresh: bool):
        saved = (self.enabled, self.cache)
        self.enabled = enabled
        if fresh:
            self.cache = {}
        try:
            yield
        finally:
            self.enabled, self.cache = saved

    def cast_low(self, t):
        if not (isinstance(t, torch.Tensor) and t.is_floating_point() and t.dtype == torch.float32):
            return t
        if t.is_leaf and t.requires_grad:
            hit = self.cache.get(id(t))
            if hit is None or hit[0] is not t:
                hit = self.cache[id(t)] = (t, t.to(torch.bfloat16))
            return hit[1]
        return t.to(torch.bfloat16)

    @staticmethod
    def _high(t):
        if isinstance(t, torch.Tensor) and t.dtype in _LOW_DTYPES:
            return t.float()
        return t

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _SDPA:
            return flash_sdpa(self, *args, **kwargs)
        if func in _DROPOUT:
            return cuda_dropout(func, *args, **kwargs)
        if self.enabled:
            if func in _LOWER:
                args = tuple(self.cast_low(a) for a in args)
                kwargs = {k: self.cast_low(v) for k, v in kwargs.items()}
            elif func in _FP32 and not kwargs.get("dtype"):
                args = tuple(self._high(a) for a in args)
        return func(*args, **kwargs)


@contextlib.contextmanager
def patched_for_meta(emulation: Autocast):
    """For the duration of a trace: the two checks that cannot run on meta tensors bypassed, torch.autocast on
    the meta device routed to the trace's autocast emulation, transformers' warnings quiet (see the package
    doc)."""
    real_autocast = torch.autocast

    def autocast(device_type, dtype=None, enabled=True, cache_enabled=None):
        # code that switches autocast for the tensors' device (PEFT's ParamWrapper turns it off) drives the
        # emulation on the meta device
        if str(device_type) != "meta":
            return real_autocast(device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)
        return emulation.region(enabled, fresh=False)

    saved = (masking.find_packed_sequence_indices, adam._device_dtype_check_for_fused, logging.get_verbosity())
    masking.find_packed_sequence_indices = lambda position_ids: None
    adam._device_dtype_check_for_fused = lambda p, cuda_unsupported=False: None
    logging.set_verbosity_error()
    torch.autocast = torch.amp.autocast = autocast
    try:
        yield
    finally:
        masking.find_packed_sequence_indices, adam._device_dtype_check_for_fused, verbosity = saved
        logging.set_verbosity(verbosity)
        torch.autocast = torch.amp.autocast = real_autocast


def quantize_nf4(model, bytes_per_param: float) -> int:
    """Every nn.Linear but the output head becomes a frozen uint8 storage of the NF4 size whose forward and
    backward dequantize a bf16 copy of the weight (bitsandbytes' Linear4bit + MatMul4Bit, memory-wise)."""
    head = model.get_output_embeddings()
    count = 0
    for module in list(model.modules()):
        if not isinstance(module, torch.nn.Linear) or module is head:
            continue
        shape = (module.out_features, module.in_features)
        nbytes = math.ceil(shape[0] * shape[1] * bytes_per_param)
        module.weight = torch.nn.Parameter(torch.empty(nbytes, dtype=torch.uint8, device="meta"), requires_grad=False)
        module.nf4_shape = shape
        module.forward = types.MethodType(nf4_linear_forward, module)
        count += 1
    return count


def nf4_linear_forward(self, x):
    """bitsandbytes Linear4bit.forward: input cast to the compute dtype, output cast back to the input dtype."""
    inp_dtype = x.dtype
    out = NF4Matmul.apply(x.to(torch.bfloat16), self.weight, self.nf4_shape)
    if self.bias is not None:
        out = out + self.bias.to(out.dtype)
    return out.to(inp_dtype)


class NF4Matmul(torch.autograd.Function):
    """MatMul4Bit: nothing saved but the quantized weight; the weight is dequantized again in backward."""

    @staticmethod
    def forward(ctx, x, packed, shape):
        ctx.packed, ctx.shape = packed, shape
        weight = torch.empty(shape, dtype=torch.bfloat16, device=x.device)  # dequantize_4bit's output
        return torch.nn.functional.linear(x, weight)

    @staticmethod
    def backward(ctx, grad):
        weight = torch.empty(ctx.shape, dtype=torch.bfloat16, device=grad.device)
        return torch.matmul(grad, weight.to(grad.dtype)), None, None


FLASH_STAND_IN = "meta_trace_attention"


def register_flash_stand_in() -> str:
    """An attention implementation for transformers with FlashAttention-2's interface: the model's own code
    around it runs as with flash_attention_2; the kernel is the SDPA stand-in (flash_sdpa) with k/v unexpanded."""
    def flash_stand_in(module, query, key, value, attention_mask, dropout=0.0, scaling=None, sliding_window=None,
                       softcap=None, **kwargs):
        out = torch.nn.functional.scaled_dot_product_attention(query, key, value, is_causal=True, scale=scaling,
                                                               enable_gqa=True)
        return out.transpose(1, 2), None

    AttentionInterface.register(FLASH_STAND_IN, flash_stand_in)
    ALL_MASK_ATTENTION_FUNCTIONS.register(FLASH_STAND_IN, flash_attention_mask)
    return FLASH_STAND_IN


def cuda_dropout(func, input, p=0.5, training=True, inplace=False, train=None):
    """torch.dropout off CUDA multiplies by a float noise tensor and saves it (4 bytes per element); on CUDA it
    is native_dropout, which saves a bool mask (1 byte): run the CUDA one."""
    training = training if train is None else train
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        return func(input, p, training)
    return torch.native_dropout(input, p, True)[0]


def _round_up(n: int, m: int) -> int:
    return -(-n // m) * m


class FlashSDPA(torch.autograd.Function):
    """The attention kernel's memory, as flash_sdpa describes it."""

    @staticmethod
    def forward(ctx, q, k, v, mask):
        b, h, s, _ = q.shape
        out = torch.empty(b, s, h, v.shape[-1], dtype=q.dtype, device=q.device).transpose(1, 2)
        lse = torch.empty(b, h, s, dtype=torch.float32, device=q.device)
        ctx.save_for_backward(q, k, v, out, lse, mask)
        return out

    @staticmethod
    def backward(ctx, grad):
        q, k, v, out, lse, mask = ctx.saved_tensors
        b, h, s, d = q.shape
        hk, sk = k.shape[1], k.shape[2]
        dq = torch.empty(b, s, h, d, dtype=q.dtype, device=q.device).transpose(1, 2)
        dq_accum = torch.empty(b, _round_up(s, 128), h, _round_up(d, 32 if d <= 128 else 64),
                               dtype=torch.float32, device=q.device)
        softmax_d = torch.empty(b, h, _round_up(s, 128), dtype=torch.float32, device=q.device)
        if hk != h:  # GQA: gradients per query head first, then summed per key/value head
            dk_expanded = torch.empty(b, sk, h, d, dtype=k.dtype, device=k.device)
            dv_expanded = torch.empty(b, sk, h, v.shape[-1], dtype=v.dtype, device=v.device)
            del dk_expanded, dv_expanded
        dk = torch.empty(b, sk, hk, d, dtype=k.dtype, device=k.device).transpose(1, 2)
        dv = torch.empty(b, sk, hk, v.shape[-1], dtype=v.dtype, device=v.device).transpose(1, 2)
        del dq_accum, softmax_d
        return dq, dk, dv, None


def flash_sdpa(autocast: Autocast, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
               enable_gqa=False):
    """scaled_dot_product_attention as the CUDA FlashAttention-2 / memory-efficient kernels hold memory, not as
    the math fallback that the meta device would run (which keeps the S x S scores). Forward: the output (laid out
    (B, S, H, D), so transformers' transpose + contiguous is free) and the fp32 log-sum-exp per head and query are
    saved with q, k, v (and the mask). Backward: dq, dk, dv, plus what PyTorch's flash wrapper allocates: an fp32
    dq accumulator (B, S, H, D rounded), softmax_d (B, H, S rounded), and with GQA dk/dv expanded to H heads."""
    if autocast.enabled:
        query, key, value = (autocast.cast_low(t) for t in (query, key, value))
    if dropout_p:
        raise ValueError("attention dropout is not traced")
    mask = attn_mask if isinstance(attn_mask, torch.Tensor) else None
    return FlashSDPA.apply(query, key, value, mask)


class FusedLinearCrossEntropy(torch.autograd.Function):
    """Liger's LigerFusedLinearCrossEntropyFunction, memory-wise: forward allocates grad_input (like the hidden
    states), an fp32 loss per token and, when lm_head is trained, grad_weight; the tokens go through in chunks
    of next_pow2(ceil(BT / ceil(V / H))) rows, each chunk's logits (in the hidden dtype) overwritten by their
    gradient in place; backward returns the saved gradients."""

    @staticmethod
    def forward(ctx, x, weight, labels):
        rows, width = x.shape
        vocab = weight.shape[0]
        w = weight if weight.dtype == x.dtype else weight.to(x.dtype)
        chunk = 1 << max(0, math.ceil(math.log2(math.ceil(rows / math.ceil(vocab / width)))))
        grad_input = torch.zeros_like(x)
        grad_weight = torch.zeros_like(weight) if weight.requires_grad else None
        loss_1d = torch.zeros(rows, dtype=torch.float32, device=x.device)
        for start in range(0, rows, chunk):
            part = x[start:start + chunk]
            logits = part @ w.t()  # the kernel writes the loss and the logits' gradient in place
            grad_input[start:start + chunk] = logits @ w
            if grad_weight is not None:
                grad_weight.addmm_(logits.t().to(part.dtype), part)
            del logits
        ctx.save_for_backward(grad_input, grad_weight)
        return loss_1d.sum() / rows

    @staticmethod
    def backward(ctx, grad):  # grad is 1 for the mean loss: Liger skips the multiplication
        grad_input, grad_weight = ctx.saved_tensors
        return grad_input, grad_weight, None

"""The live-bytes accounting of a trace: a TorchDispatchMode counts every storage an operator returns once (views
share it) and a weakref finalizer sees it freed; the events replayed give the peak and what was live then."""
from __future__ import annotations

import weakref
from dataclasses import dataclass

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.weak import WeakIdKeyDictionary

CATEGORIES = ("parameters", "gradients", "optimizer_state", "activations", "logits_loss", "temporaries")


class Tracker(TorchDispatchMode):
    """Counts every storage an operator returns once, on the meta device (the GPU), and sees it freed. One per
    trace: it holds that trace's storages, events, phases and which storages are parameters, gradients and
    optimizer state."""

    def __init__(self, block: int):
        super().__init__()
        self.block = block                    # storages are rounded up to it, as the CUDA allocator does
        self.keys = WeakIdKeyDictionary()     # storage -> our id (ids are never reused)
        self.size: dict[int, int] = {}
        self.alloc_phase: dict[int, int] = {}
        self.what: dict[int, str] = {}        # shape, dtype and operator of each storage, for inspection
        self.op = "setup"
        self.events: list[tuple[int, int, int]] = []  # (storage id, +-bytes, phase index)
        self.phases: list[str] = []
        self.phase_index: dict[str, int] = {}
        self.phase = 0
        self.param_keys: set[int] = set()
        self.grad_keys: set[int] = set()
        self.state_keys: set[int] = set()
        self.set_phase("setup")

    def set_phase(self, name: str) -> str:
        previous = self.phases[self.phase] if self.phases else name
        if name not in self.phase_index:
            self.phase_index[name] = len(self.phases)
            self.phases.append(name)
        self.phase = self.phase_index[name]
        return previous

    def key(self, t) -> int | None:
        if not isinstance(t, torch.Tensor) or t.device.type != "meta":
            return None
        st = t.untyped_storage()
        k = self.keys.get(st)
        if k is None:
            nbytes = st.nbytes()
            k = len(self.size)
            self.keys[st] = k
            size = -(-nbytes // self.block) * self.block if nbytes else 0
            self.size[k] = size
            self.alloc_phase[k] = self.phase
            self.what[k] = f"{self.op} {tuple(t.shape)} {str(t.dtype).replace('torch.', '')}"
            self.events.append((k, size, self.phase))
            weakref.finalize(st, self._freed, k)
        return k

    def _freed(self, k: int) -> None:
        self.events.append((k, -self.size[k], self.phase))

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.op = func.__name__
        for t in tree_leaves(out):
            self.key(t)
        return out

    def category(self, k: int) -> str:
        if k in self.param_keys:
            return "parameters"
        if k in self.grad_keys:
            return "gradients"
        if k in self.state_keys:
            return "optimizer_state"
        phase = self.phases[self.alloc_phase[k]]
        if phase.startswith("loss"):
            return "logits_loss"
        if phase.startswith("forward") or phase.endswith("(recompute)"):
            return "activations"
        return "temporaries"

    def split(self, live: dict[int, int]) -> dict[str, int]:
        """Live bytes per category."""
        out = dict.fromkeys(CATEGORIES, 0)
        for k, size in live.items():
            out[self.category(k)] += size
        return out


@dataclass(frozen=True)
class Replay:
    """A traced step replayed from its events: the peak of live bytes, the phase it fell in, the highest live bytes
    of each phase, and the storages live at the peak and when the forward pass ended."""
    tracker: Tracker
    peak: int
    peak_phase: str
    phases: dict[str, int]
    peak_live: dict[int, int]
    end_live: dict[int, int]

    def explain_live(self, which: str = "peak_live", skip=("parameters", "optimizer_state")) -> list[str]:
        """The storages live at the peak ('peak_live') or forward end ('end_live'): category, bytes, the operator
        that made it, its shape and dtype, the phase it was made in."""
        tracker, live = self.tracker, getattr(self, which)
        rows = [(tracker.category(k), size, tracker.what[k], tracker.phases[tracker.alloc_phase[k]])
                for k, size in live.items()]
        return [f"{c:14s} {size:>12d}  {what}  [{phase}]" for c, size, what, phase in sorted(rows) if c not in skip]


def replay(tracker: Tracker, start: int, forward_end: int) -> Replay:
    """Replay the tracker's events: the peak from event `start` on (the step reported), what was live then, and
    what was live after event `forward_end` - 1 (the forward pass of that step returned)."""
    live, total = {}, 0
    peak, peak_at, phase_peaks = -1, 0, {}
    peak_live = end_live = {}
    for index, (k, delta, phase) in enumerate(tracker.events):
        total += delta
        if delta > 0:
            live[k] = delta
        else:
            live.pop(k, None)
        if index >= start:
            name = tracker.phases[phase]
            phase_peaks[name] = max(phase_peaks.get(name, 0), total)
            if total > peak:
                peak, peak_at, peak_live = total, index, dict(live)
        if index == forward_end - 1:
            end_live = dict(live)
    return Replay(tracker, peak, tracker.phases[tracker.events[peak_at][2]], phase_peaks, peak_live, end_live)

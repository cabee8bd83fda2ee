"""S3Checkpoints: a transformers.TrainerCallback that puts every saved checkpoint in S3 while training goes on.

    from pipeline.train import S3Checkpoints
    trainer = SFTTrainer(..., callbacks=[S3Checkpoints("s3://bucket/runs/job-1")])

Usable from trl, axolotl (its `callbacks`/plugins) or any HF Trainer. on_save hard-links the checkpoint folder
apart (instant on the same disk; a copy elsewhere), so the step waits for no upload and the trainer may delete
its own folder (save_total_limit) meanwhile; one background thread uploads (pipeline.train.checkpoints). At the
end of training it waits for the queue, uploads the final model (the adapter, for PEFT) and the evaluation report
and keeps only the best checkpoint. It also records, in each log entry, the seconds per optimizer step and, on a
GPU, torch.cuda.max_memory_reserved: what `prepare calibrate` reads.
"""
from __future__ import annotations

import logging
import queue
import shutil
import threading
import time
from pathlib import Path

from transformers import TrainerCallback

from pipeline.core.s3 import S3Error, check_destination_uri
from pipeline.core.s3 import check_bucket as head_bucket
from pipeline.train import checkpoints as ck

log = logging.getLogger(__name__)
STAGING = ".prepare-s3-staging"


class S3Checkpoints(TrainerCallback):
    def __init__(self, uri: str, keep: int = 2, keep_final: int = 1, upload_final: bool = True,
                 check_bucket: bool = True):
        check_destination_uri(uri)
        if check_bucket:  # a wrong bucket or credentials fail before the first step, not at the first save
            head_bucket(uri)
        self.uri, self.keep, self.keep_final, self.upload_final = uri.rstrip("/"), keep, keep_final, upload_final
        self.errors: list[str] = []
        self.uploaded: list[str] = []
        self._queue: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._last_step_time: float | None = None
        self._window: list[float] = []
        self._resumed_from: int | None = None

    # ------------------------------------------------------------------ background upload
    def _worker(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                self._queue.task_done()
                return
            folder, step = item
            try:
                ck.upload_checkpoint(folder, self.uri)
                self.uploaded.append(folder.name)
                # the best as the checkpoint's own state has it, recorded beside the checkpoints (best.json)
                best = ck.record_best(self.uri, ck.trainer_state(folder))
                ck.prune(self.uri, self.keep, best, newest_step=step)
            except Exception as exc:  # noqa: BLE001 - training goes on; reported at the end of training

                message = str(exc) if isinstance(exc, S3Error) else f"{folder.name}: {type(exc).__name__}: {exc}"
                self.errors.append(message)
                log.error("checkpoint upload failed: %s", message)
            finally:
                shutil.rmtree(folder, ignore_errors=True)
                self._queue.task_done()

    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._worker, name="s3-checkpoints", daemon=True)
            self._thread.start()

    # ------------------------------------------------------------------ trainer events
    def on_train_begin(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            self._start()
        self._last_step_time = time.perf_counter()
        # a resumed run starts trl's num_tokens again from 0: calibrate counts tokens per run segment
        self._resumed_from = state.global_step or None

    def on_step_end(self, args, state, control, **kwargs):
        now = time.perf_counter()
        if self._last_step_time is not None:
            self._window.append(now - self._last_step_time)
        self._last_step_time = now

    def on_evaluate(self, args, state, control, **kwargs):
        self._last_step_time = time.perf_counter()  # evaluation time is not step time

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.log_history or not self._window:
            return
        entry = state.log_history[-1]  # the Trainer appended a copy of `logs`: this one is saved in the state
        if "loss" in entry:
            entry["step_seconds"] = round(sum(self._window) / len(self._window), 6)
            entry["steps_timed"] = len(self._window)
            self._window = []
            if self._resumed_from is not None:
                entry["resumed_from_step"] = self._resumed_from
                self._resumed_from = None
            device = _device(args)
            if device:
                entry["device"] = device
            try:
                import torch

                if torch.cuda.is_available():
                    entry["peak_memory_reserved_gib"] = round(torch.cuda.max_memory_reserved() / 1024**3, 3)
                    entry["peak_memory_allocated_gib"] = round(torch.cuda.max_memory_allocated() / 1024**3, 3)
            except Exception:  # noqa: BLE001 - a measurement, never a reason to stop training
                pass

    def on_save(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return
        self._start()
        name = f"checkpoint-{state.global_step}"
        source = Path(args.output_dir) / name
        if not source.is_dir():
            return
        stage = Path(args.output_dir) / STAGING / name
        shutil.rmtree(stage, ignore_errors=True)
        files, links = ck.listing(source)   # links are never followed (their target is not the checkpoint's)
        for rel in links:
            log.warning("%s/%s: a symbolic link, not uploaded", name, rel)
        for rel in files:
            (stage / rel).parent.mkdir(parents=True, exist_ok=True)
            ck.link_or_copy(source / rel, stage / rel)
        self._queue.put((stage, state.global_step))

    def on_train_end(self, args, state, control, model=None, **kwargs):
        if not state.is_world_process_zero:
            return
        self._queue.put(None)
        self._queue.join()   # the end of training waits for the last checkpoints: nothing is left behind
        self._thread = None
        final = None
        if self.upload_final and model is not None and hasattr(model, "save_pretrained"):
            final = Path(args.output_dir) / STAGING / ck.FINAL
            shutil.rmtree(final, ignore_errors=True)
            model.save_pretrained(final)  # a PEFT model writes only its adapter
        try:
            result = ck.finish(self.uri, _state_dict(state), self.keep_final, final)
            self.best = result["best"]
        except Exception as exc:  # noqa: BLE001
            self.errors.append(str(exc))
        finally:
            shutil.rmtree(Path(args.output_dir) / STAGING, ignore_errors=True)
        if self.errors:
            raise S3Error("checkpoint upload to " + self.uri + " failed: " + "; ".join(self.errors[:3]))


def _state_dict(state) -> dict:
    return {"log_history": state.log_history, "best_model_checkpoint": state.best_model_checkpoint,
            "best_metric": state.best_metric, "best_global_step": state.best_global_step,
            "global_step": state.global_step}


def _device(args) -> str | None:
    """The card the step times were measured on (torch.cuda.get_device_name), or the kind of device ("cpu",
    "mps") off CUDA: calibrate stores only a measurement of the planned card."""
    try:
        import torch

        device = args.device
        if device.type == "cuda":
            return torch.cuda.get_device_name(device)
        return device.type
    except Exception:  # noqa: BLE001 - a measurement, never a reason to stop training
        return None

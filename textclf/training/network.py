"""The training loop: sparse minibatches -> parameters, one device dispatch per epoch.

Each epoch is a single jitted `lax.scan` over its minibatches (parameters and optimizer state stay on the
device, no per-step host round trips); the host only draws each epoch's document order (numpy), and the
minibatches are gathered from the resident training set on the device (textclf/training/device_data.py). The epoch is
compiled once per run, ahead of time (`jit(...).lower(...).compile()`), so its cost is measured on its own.
"""

from __future__ import annotations

import functools
import time
import weakref
from dataclasses import dataclass
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from pipelines.batches import make_batches
from textclf.settings import Settings
from textclf.models.mlp import Params, batched_logits, predicted_right
from textclf.training.parallel import features as feature_parallel
from textclf.training.backends import SEARCH_COMPILER_OPTIONS
from textclf.training.parallel.processes import exchange_arrays, summed
from textclf.training.events import EpochStats
from textclf.training.epochs import resume, run_epochs
from textclf.training.inputs import TrainingRows, Watch
from textclf.training.steps.optimizers import scheduled_rates
from textclf.training.steps.step import Step, make_step

EVAL_BATCH = 1024


@dataclass
class NetworkResult:
    params: Params  # numpy arrays
    history: list[EpochStats]
    compile_seconds: float = 0.0
    train_seconds: float = 0.0  # includes the per-epoch validation, scored in the same dispatch
    devices: int = 1  # devices that shared each batch (all processes together)


def _xla_scores(params, indices, values, rows):
    return batched_logits(params, indices, values, rows, EVAL_BATCH)


_jitted_scores = jax.jit(_xla_scores)


def resident_epoch_function(step: Step, settings: Settings, n_classes: int, mesh, cap: int):
    """One whole epoch as one dispatch: gather the minibatches from the resident training set
    (textclf/training/device_data.py), scan the training step over them, then score the validation batches:
    (params, opt_state, data, order (steps, B), lrs (steps,), eval batches or None, decay=None, steps=None)
      -> (params, opt_state, losses (steps,), corrects (steps,), eval hits or None).
    decay, steps (one device, a bucketed step): the weight decay as a () array (one program for every decay a
    search chooses), else settings.weight_decay, compiled in; how many of the order's steps to run (the rest a
    shape bucket's padding).
    data: a DeviceCSR (flat batches of width cap) or DevicePieces (pieces layout, cap pieces a batch).
    mesh (several devices): the gather and the scan run inside shard_map, each device on its (steps, B/N) slice
    of the order (data parallelism), or, on a mesh of feature_parallel.AXIS, on the whole batch and its own
    feature rows (data: (the sharded data, the labels)); validation runs on the parameters as they lie."""
    from textclf.training.device_data import DevicePieces, gather_batches, gather_piece_batches

    def local(params, opt_state, data, order, lrs, axis_name=None, decay=None, steps=None):
        if isinstance(data, DevicePieces):
            batches = gather_piece_batches(data, order, cap)
        else:
            batches = gather_batches(data, order, cap)
        epoch = step.epoch(
            settings.optimizer, settings.momentum, settings.weight_decay if decay is None else decay, n_classes
        )
        if steps is None:
            return epoch(params, opt_state, *batches, lrs, axis_name=axis_name)
        return epoch(params, opt_state, *batches, lrs, axis_name=axis_name, steps=steps)

    train_part = local
    if mesh is not None and mesh.axis_names == (feature_parallel.AXIS,):
        train_part = feature_parallel.epoch_function(
            settings.optimizer, settings.momentum, settings.weight_decay, mesh, cap
        )
    elif mesh is not None:
        from textclf.training.parallel.data import AXIS, shard_epoch

        train_part = shard_epoch(lambda *args: local(*args, axis_name=AXIS), mesh)

    def whole(params, opt_state, data, order, lrs, eval_batches, decay=None, steps=None):
        if decay is None:
            params, opt_state, losses, corrects = train_part(params, opt_state, data, order, lrs)
        else:  # (one device, a bucketed step: `steps` of the order's batches run, the rest padding)
            params, opt_state, losses, corrects = local(params, opt_state, data, order, lrs, decay=decay, steps=steps)
        hits = None
        if eval_batches is not None:
            indices, values, rows, labels, mask = eval_batches
            scores = batched_logits(step.unpad(params, n_classes), indices, values, rows, mask.shape[-1])
            hits = jnp.sum(predicted_right(scores, labels) * mask)
        return params, opt_state, losses, corrects, hits

    return whole


class _Compiled:
    """Ahead-of-time compiled functions keyed by argument shapes, with the seconds spent compiling.
    compiler_options: XLA's, for every compilation of it."""

    def __init__(self, fn: Callable, donate: tuple[int, ...] = (), compiler_options: dict | None = None):
        self.jitted = jax.jit(fn, donate_argnums=donate)
        self.compiler_options = compiler_options
        self.cache: dict = {}
        self.seconds = 0.0

    def __call__(self, *args):
        key = tuple((a.shape, a.dtype) for a in jax.tree.leaves(args))
        if key not in self.cache:
            start = time.perf_counter()
            self.cache[key] = self.jitted.lower(*args).compile(compiler_options=self.compiler_options)
            self.seconds += time.perf_counter() - start
        return self.cache[key](*args)


# The epochs _warm_epoch holds, by its arguments: weak, so an entry leaves with the cache's (cache_clear, eviction).
_warm_epochs_built: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


# A short training compiles its epoch as the model search compiles its programs, without XLA's Triton GEMM
# fusions (backends.SEARCH_COMPILER_OPTIONS): it compiles in a fraction of the time and runs a little slower, so up
# to this many documents x epochs the compilation saved is more than the training lost.
QUICK_COMPILE_DOCUMENT_EPOCHS = 4_000_000


def quick_compile(documents: int, epochs: int) -> bool:
    """Whether a training of `documents` x `epochs` compiles its epoch without the Triton GEMM fusions."""
    return documents * epochs <= QUICK_COMPILE_DOCUMENT_EPOCHS


@functools.lru_cache(maxsize=32)
def _warm_epoch(
    step: Step, optimizer: str, momentum: float, weight_decay: float, n_classes: int, mesh, quick: bool, cap: int
) -> _Compiled:
    """One compiled epoch function per configuration for the life of the process, so a daemon's later jobs
    with the same shapes reuse the executables of earlier ones instead of tracing and compiling again.
    quick: compiled with the search's options (quick_compile). weight_decay None: passed to each call (decay)."""
    settings = Settings(optimizer=optimizer, momentum=momentum, weight_decay=weight_decay or 0.0)
    compiled = _Compiled(
        resident_epoch_function(step, settings, n_classes, mesh, cap),
        donate=(0, 1),
        compiler_options=SEARCH_COMPILER_OPTIONS if quick else None,
    )
    _warm_epochs_built[(step, optimizer, momentum, weight_decay, n_classes, mesh, quick, cap)] = compiled
    return compiled


def _reusable_width(config: tuple, width: int) -> int:
    """The batch width to compile for: `width`, or the narrowest width up to twice it for which this process
    already compiled the epoch of this configuration. A wider batch only adds padding (zeros that change no
    sum), and the width a run needs depends on its seed's shuffle, so a daemon's next job would otherwise
    compile again for a slightly narrower width (most of a warm job's time on a GPU)."""
    built = [key[-1] for key in list(_warm_epochs_built.keys()) if key[:-1] == tuple(config)]
    return min([w for w in built if width <= w <= 2 * width], default=width)


def held_out_scores_device(params: Params, matrix: sp.csr_matrix) -> np.ndarray:
    """(n, F) CSR -> (n, C) scores on the default device for a large matrix, the held-out or test documents of a run
    (inference.device_scores scores a service's few), on batches gathered on
    the device (device_data.batches_in_row_order), where make_batches' padded batches and their index arithmetic on
    the host took ~750 MB of a million-document run's host memory for its 100,000 test documents (BENCHMARKS.md,
    "Big corpora with no flags"). The same scores."""
    from textclf.training.device_data import batches_in_row_order

    batches = batches_in_row_order(matrix, np.zeros(matrix.shape[0], np.int32), EVAL_BATCH)
    parts = [np.asarray(_jitted_scores(params, *batch[:3])) for batch in batches()]
    return np.concatenate(parts).reshape(-1, parts[0].shape[-1])[: matrix.shape[0]]


def same_shapes(resident):
    """This process's resident training set (DeviceCSR or DevicePieces) padded to the longest of every
    process's, with entries that add nothing, so that all processes stack arrays of one shape."""
    from textclf.training.device_data import DevicePieces

    resident = resident._replace(weights=None)  # (documents' weights train on one process only)
    fields = resident._fields[:-1]
    shared = exchange_arrays({name: np.array([len(getattr(resident, name))]) for name in fields})
    longest = {name: max(int(part[name][0]) for part in shared) for name in fields}
    pointers = resident._fields[0]  # indptr / piece_ptr: repeat the last (documents past the end hold nothing)

    def pad(name, array):
        extra = longest[name] - len(array)
        if name == pointers:
            return np.concatenate([array, np.full(extra, array[-1], array.dtype)])
        if name == "indices" and isinstance(resident, DevicePieces):  # padding slots hold the out-of-range index
            fill = np.full((extra, *array.shape[1:]), int(array[-1, -1]), array.dtype)
            return np.concatenate([array, fill])
        return np.concatenate([array, np.zeros((extra, *array.shape[1:]), array.dtype)])

    return type(resident)(*(pad(name, getattr(resident, name)) for name in fields))


class _LocalEval:
    """Several processes: each scores its own held-out documents on the host after an epoch, and the hits are
    summed across processes (the held-out documents are never gathered in one place)."""

    def __init__(self, eval_x: sp.csr_matrix, eval_y: np.ndarray):
        self.x, self.y = eval_x, np.asarray(eval_y)

    def accuracy(self, params: Params) -> float:
        from textclf.models.weights import host_scores

        hits = int((host_scores(params, self.x).argmax(axis=1) == self.y).sum()) if self.x.shape[0] else 0
        hits, total = summed(hits, self.x.shape[0])
        return hits / max(1, total)


def fit_network(
    rows: TrainingRows,
    settings: Settings,
    backend: str = "xla",
    watch: Watch = Watch(),
    kernel_config=None,
    initial_params: Params | None = None,
    shares=None,
) -> NetworkResult:
    """Train one network with minibatch SGD on rows.x (all its rows; rows.eval_x scored after every epoch if
    given). kernel_config overrides the tuned Pallas configuration; initial_params the seeded initialisation.
    watch: watch.checkpointer resumes from its state if it has one, and textclf.training.epochs.run_epochs saves it
    when due after each epoch (after watch.on_epoch); watch.stop_requested() True after an epoch saves and raises
    TrainingStopped (the daemon's SIGTERM: the job continues later from that checkpoint); watch.early_stopping
    (textclf.training.epochs.EarlyStopping) stops when it says so and its best epoch's parameters are returned. A run
    resumed from a checkpoint scores its held-out documents from the resumed epoch on.
    shares (data_parallel.RowShare): several processes, each holding its own share of the training documents
    (rows: this process's, and its share of the held-out documents): the batches are the one-process run's over
    all documents, each process feeding the rows of each batch that it holds."""
    run = _NetworkRun(rows, settings, backend, shares, kernel_config)
    start = time.perf_counter()
    if initial_params is None:
        params, opt_state = run.step.start_state(
            np.int32(settings.seed),
            run.columns,
            settings.hidden,
            rows.n_classes,
            settings.init_gain,
            settings.optimizer,
            rows.x.shape[1] if run.bucketed else None,
        )
    else:
        params, opt_state = run.step.ready_state(_with_rows(initial_params, run.columns), settings.optimizer)
    jax.block_until_ready((params, opt_state))
    run.seconds["compile"] = time.perf_counter() - start  # nearly all of it compilation the first time
    params, opt_state, history, first_epoch = resume(watch.checkpointer, params, opt_state)
    params, opt_state = run.upload(params, opt_state)
    run.prepare_epochs(first_epoch)
    early_stopping = watch.early_stopping
    early_stop = (
        None if early_stopping is None else (lambda epoch, params: early_stopping(epoch, lambda: run.finished(params)))
    )
    params, opt_state, history = run_epochs(
        params,
        opt_state,
        history,
        first_epoch,
        run.epochs,
        run.one_epoch,
        watch.on_epoch,
        watch.checkpointer,
        watch.stop_requested,
        early_stop,
    )
    numpy_params = (
        run.finished(params)
        if early_stopping is None or early_stopping.best_params is None
        else early_stopping.best_params
    )
    # Validation is scored inside each epoch's dispatch, so its time is part of train_seconds.
    return NetworkResult(numpy_params, history, run.seconds["compile"], run.seconds["train"], run.parts)


def _with_rows(params: Params, rows: int) -> Params:
    """params with W1 padded by zero rows up to `rows` (the bucket its run's programs take)."""
    w1 = np.asarray(params.w1)
    if w1.shape[0] >= rows:
        return params
    return params._replace(w1=np.concatenate([w1, np.zeros((rows - w1.shape[0], w1.shape[1]), w1.dtype)]))


class _NetworkRun:
    """One network's training as fit_network carries it out: where the batches run (one device, the batch split
    over devices or processes, or W1 split by feature rows), what goes to the device(s) once, and one epoch's
    dispatches. Decided once here from the settings, backend and shares; the epochs do not re-decide."""

    def __init__(self, rows: TrainingRows, settings: Settings, backend: str, shares, kernel_config):
        from textclf.training.parallel import data as parallel
        from textclf.training.device_data import bucket, epoch_order

        self.rows, self.settings, self.shares = rows, settings, shares
        split_features = feature_parallel.choose_layout(settings.parallel, backend) == "features"
        if split_features:  # each device on the whole batch and its rows of W1
            mesh = feature_parallel.feature_mesh(settings.devices)
        else:
            mesh = parallel.data_mesh(settings.devices, settings.batch_size)
        self.mesh = mesh if mesh.size > 1 else None  # one device: the plain jitted epoch, no collectives
        self.split_features = split_features and self.mesh is not None
        self.parts = self.mesh.size if self.mesh else 1
        self.n = shares.total if shares else rows.x.shape[0]  # documents in an epoch, over all processes
        self.steps_per_epoch = -(-self.n // settings.batch_size)
        self.epochs = settings.epochs_for(self.n)
        self.shared_rows = shares is not None and self.mesh is not None and jax.process_count() > 1
        self.held_orders = None
        if self.shared_rows:  # each process feeds the rows of every batch that it holds, split over its devices
            self.local_devices = self.parts // jax.process_count()
            all_orders = {
                e: epoch_order(settings.seed, e, self.n, self.steps_per_epoch, settings.batch_size)
                for e in range(self.epochs)
            }
            self.held_orders, rows_per_process = parallel.local_orders(all_orders, shares, self.local_devices)
            local_batch = rows_per_process // self.local_devices
        elif self.mesh and not self.split_features:
            local_batch = parallel.check_batch(settings.batch_size, self.mesh)
        else:
            local_batch = settings.batch_size
        self.step = make_step(backend, settings, local_batch, kernel_config)
        self.batch_rows_a_device = local_batch
        # One device: the programs take W1's rows, the documents and the steps in their buckets
        # (pipelines.batches.shape_bucket), so that they serve the next corpus of the bucket.
        self.bucketed = self.step.bucketed and self.mesh is None
        self.columns = bucket(rows.x.shape[1]) if self.bucketed else rows.x.shape[1]
        self.seconds = {"train": 0.0, "compile": 0.0}

    def upload(self, params, opt_state) -> tuple:
        """Everything the epochs need goes to the device(s) once: the training set, the validation batches, the
        parameters. (device_put, not jnp.asarray, which compiles a small program per array shape: ~50 ms each on
        a GPU.) -> (params, opt_state) where the epochs read them."""
        from textclf.training.parallel import data as parallel
        from textclf.training.device_data import (
            bucketed_batches,
            host_csr,
            host_pieces,
            piece_width,
            scoring_rows,
            upload_csr,
        )

        train_x, train_y, mesh, weights = self.rows.x, self.rows.y, self.mesh, self.rows.weights
        pieces = self.step.layout == "pieces"
        if weights is not None and mesh is not None:
            raise ValueError("documents' weights train one network on one device")
        if self.split_features:
            self.place = functools.partial(feature_parallel.place, mesh=mesh, specs=feature_parallel.REPLICATED)
            self.uploaded = feature_parallel.host_shards(
                train_x, train_y, self.parts, self.step.layout, piece_width(train_x) if pieces else 0
            )
            self.data = (
                feature_parallel.place(self.uploaded, mesh, feature_parallel.SHARDED),
                self.place(np.asarray(train_y, np.int32)),
            )
            state = feature_parallel.pad_params((params, opt_state), self.parts)
            params, opt_state = feature_parallel.place(state, mesh, feature_parallel.param_specs(state))
        else:
            self.place = (lambda tree: parallel.put(tree, mesh, parallel.REPLICATED)) if mesh else jax.device_put
            if mesh:  # each device its own copy of its process's documents, of the same shapes on every process
                uploaded = host_pieces(train_x, train_y, piece_width(train_x)) if pieces else host_csr(train_x, train_y)
                self.uploaded = uploaded
                self.data = parallel.put_stacked(same_shapes(uploaded) if self.shared_rows else uploaded, mesh)
            else:
                self.uploaded = (
                    host_pieces(train_x, train_y, piece_width(train_x), self.columns, self.bucketed, weights)
                    if pieces
                    else None
                )
                self.data = self.place(self.uploaded) if pieces else upload_csr(train_x, train_y, weights)
            params, opt_state = self.place((params, opt_state))
        self.eval_batches = self.local_eval = None
        if self.rows.eval_x is not None and self.shared_rows:  # each process scores its own share, hits summed
            self.local_eval = _LocalEval(self.rows.eval_x, self.rows.eval_y)
        elif self.rows.scored:
            rows = scoring_rows(self.rows.eval_x.shape[0], EVAL_BATCH)
            batches = make_batches(self.rows.eval_x, np.asarray(self.rows.eval_y), rows).arrays()
            self.eval_batches = self.place(bucketed_batches(batches) if self.bucketed else batches)
        return params, opt_state

    def prepare_epochs(self, first_epoch: int) -> None:
        """Each epoch's document order (host, numpy), drawn once; one batch width for the whole run, the widest
        minibatch of all its epochs, so the epoch compiles once (per-epoch widths made two or three compilations
        of 1-3 s each); the compiled epoch; the segments of steps an epoch is dispatched in."""
        from pipelines.batches import ShapeBuckets
        from textclf.training.device_data import (
            PIECE_WIDTHS,
            bucketed_order,
            epoch_order,
            piece_width,
            pieces_cap,
            segment_steps,
            shape_buckets,
        )

        settings, n, pieces = self.settings, self.n, self.step.layout == "pieces"
        if self.shared_rows:
            self.orders = {e: self.held_orders[e] for e in range(first_epoch, self.epochs)}
        else:
            self.orders = {
                e: epoch_order(settings.seed, e, n, self.steps_per_epoch, settings.batch_size)
                for e in range(first_epoch, self.epochs)
            }
        widest = self._widest_batch(pieces)
        config = (
            self.step,
            settings.optimizer,
            settings.momentum,
            None if self.bucketed else settings.weight_decay,
            self.rows.n_classes,
            self.mesh,
            quick_compile(n, self.epochs),
        )
        buckets = shape_buckets() if self.bucketed else ShapeBuckets(8, 0)
        if pieces:  # (the floor: the slots of rows_per_cap nonzeros a document, in pieces of this corpus's width)
            floor = buckets.rows_per_cap * self.batch_rows_a_device // piece_width(self.rows.x)
            width = pieces_cap(max(widest, floor), buckets.per_octave)
        else:
            width = buckets.cap(widest, self.batch_rows_a_device)
        self.run_epoch = _warm_epoch(*config, _reusable_width(config, width))
        self.batch_rows = np.minimum(settings.batch_size, n - np.arange(self.steps_per_epoch) * settings.batch_size)
        # An epoch's batches are gathered a segment of steps at a time (device_data.SEGMENT_BYTES): a step's
        # indices, values and rows take 12 bytes a slot, a slot a nonzero or, in the pieces layout, a piece of
        # nonzeros (of the widest piece width where several processes must cut the same segments from their shares).
        nonzeros_a_slot = (PIECE_WIDTHS[-1] if self.shared_rows else piece_width(self.rows.x)) if pieces else 1
        self.dispatched = self.steps_per_epoch  # steps an epoch dispatches: its own, or up to their bucket
        if self.bucketed:
            self.orders = {e: bucketed_order(order, 12 * width * nonzeros_a_slot) for e, order in self.orders.items()}
            self.dispatched = len(next(iter(self.orders.values()), np.zeros(self.steps_per_epoch)))
        self.segment = segment_steps(self.dispatched, 12 * width * nonzeros_a_slot)
        self.total_steps = self.steps_per_epoch * self.epochs

    def _widest_batch(self, pieces: bool) -> int:
        """The widest minibatch of the epochs to run, in pieces or nonzeros (upload_csr's (n + 1,) pointers read
        back: 4 MB at 1M documents); several processes: the widest of any process's, so all compile one shape."""
        from textclf.training.device_data import batch_nnz_max

        uploaded = self.uploaded
        starts = (
            uploaded.piece_ptr
            if pieces
            else (uploaded.indptr if uploaded is not None else np.asarray(self.data.indptr))
        )
        if self.split_features:  # every device takes the whole batch, of its own shard
            return max([1, *(feature_parallel.batch_nnz_max(uploaded, order) for order in self.orders.values())])
        if self.shared_rows:
            widest = max([1, *(batch_nnz_max(starts, order, self.local_devices) for order in self.orders.values())])
            return max(int(part["widest"][0]) for part in exchange_arrays({"widest": np.array([widest])}))
        return max([1, *(batch_nnz_max(starts, order, self.parts) for order in self.orders.values())])

    def _placed(self, order: np.ndarray):
        """(steps, B) document numbers where the epoch's dispatch reads them."""
        from textclf.training.parallel import data as parallel

        if self.shared_rows:
            return parallel.put_local_order(order, self.mesh)
        if self.mesh and not self.split_features:
            return parallel.put(order, self.mesh, parallel.BATCH)
        return self.place(order)

    def one_epoch(self, epoch: int, params, opt_state):
        """run_epochs' step: one dispatch a segment of steps, validation with the last."""
        from textclf.training.parallel.data import to_host

        start, compiled_before = time.perf_counter(), self.run_epoch.seconds
        settings, order, segment = self.settings, self.orders.pop(epoch), self.segment
        step_numbers = np.arange(epoch * self.steps_per_epoch, (epoch + 1) * self.steps_per_epoch)
        lrs = scheduled_rates(settings.lr_schedule, settings.learning_rate, step_numbers, self.total_steps)
        lrs = np.pad(lrs, (0, self.dispatched - len(lrs)))  # (the bucket's padding steps change nothing)
        parts = []
        for first in range(0, self.dispatched, segment):
            last = first + segment >= self.dispatched
            real_steps = min(segment, max(0, self.steps_per_epoch - first))  # the rest of the segment: padding
            bucketed = (np.float32(settings.weight_decay), np.int32(real_steps)) if self.bucketed else ()
            params, opt_state, *part = self.run_epoch(
                params,
                opt_state,
                self.data,
                self._placed(order[first : first + segment]),
                self.place(lrs[first : first + segment]),
                self.eval_batches if last else None,
                *bucketed,
            )
            parts.append(part)
        steps = self.steps_per_epoch
        losses = np.concatenate([to_host(losses) for losses, _, _ in parts])[:steps]  # waits for the epoch to end
        corrects = np.concatenate([to_host(corrects) for _, corrects, _ in parts])[:steps]
        hits = parts[-1][2]
        compiled = self.run_epoch.seconds - compiled_before
        seconds = time.perf_counter() - start - compiled
        self.seconds["compile"] += compiled
        self.seconds["train"] += seconds
        eval_accuracy = None if hits is None else float(to_host(hits)) / self.rows.eval_x.shape[0]
        if self.local_eval is not None:
            eval_accuracy = self.local_eval.accuracy(self.finished(params))
        stats = EpochStats(
            epoch=epoch + 1,
            loss=float((losses * self.batch_rows).sum() / self.n),
            train_accuracy=float(corrects.sum() / self.n),
            eval_accuracy=eval_accuracy,
            seconds=seconds,
            docs_per_s=self.n / seconds if seconds > 0 else float("inf"),
        )
        return params, opt_state, stats

    def finished(self, params) -> Params:
        from textclf.training.parallel.data import to_host

        return self.step.finish(Params(*to_host(tuple(params))), self.rows.n_classes, self.rows.x.shape[1])

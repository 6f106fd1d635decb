"""A/B of the dense Pallas epoch's options: textclf/pallas_step.REUSE_ZERO_BUFFER (one zero buffer per epoch,
nonzeros stored and erased, vs fresh zeros every step) and KernelConfig.adam_fused_dw1 (dW1 inside W1's Adam update),
each on and off, on news4 (stacked 10x; B = 64, 256, 4,096) and agnews7600 rows (100x; B = 4,096): us per step
of `fit_network` epochs (median of epochs 2-3). Then counts the copies of the (B, Kp) buffer in the compiled
epoch (should be 0: the erase must happen in place). GPU only.

    python -m benchmarks.fusion_ab
"""
import itertools
import re
import numpy as np, scipy.sparse as sp, jax, jax.numpy as jnp
from pipelines.corpus import read_corpus
from pipelines.vectorize import fit_vectorizer
from textclf.classifier import encode_labels
from textclf.config import Settings
from textclf import trainloop, pallas_step
from textclf.trainloop import fit_network

def load(path, repeat):
    c = read_corpus(path); s = Settings(vectorizer="tfidf")
    _, x = fit_vectorizer(c.texts, c.labels, s)
    classes = sorted(set(c.labels)); y = encode_labels(c.labels, classes)
    return sp.vstack([x] * repeat, format="csr"), np.tile(y, repeat), len(classes)

for path, repeat, batches in ((".devdata/news4/train.jsonl", 10, (64, 256, 4096)), (".devdata/agnews7600/train.jsonl", 100, (4096,))):
    x, y, nc = load(path, repeat)
    for batch, opt in itertools.product(batches, ("adam", "sgd")):
        for reuse, fuse in ((True, True), (False, True), (True, False), (False, False)):
            if opt == "sgd" and not fuse:
                continue
            pallas_step.REUSE_ZERO_BUFFER = reuse
            trainloop._warm_epoch.cache_clear()
            s = Settings(epochs=3, min_steps=0, batch_size=batch, backend="pallas", pallas_input="dense", optimizer=opt)
            config = trainloop.kernel_config_for(s).replace(input_format="dense", adam_fused_dw1=fuse)
            r = fit_network(x, y, nc, s, "pallas", kernel_config=config)
            t = float(np.median([e.seconds for e in r.history[1:]]))
            steps = -(-x.shape[0] // batch)
            print(f"{path.split('/')[1]} B={batch} {opt} reuse={reuse} fuse_adam={fuse}: {t / steps * 1e6:.1f} us/step, "
                  f"{x.shape[0] / t:,.0f} docs/s, loss {r.history[-1].loss:.4f}", flush=True)
# copies of the (B, Kp) buffer in the compiled GPU epoch
pallas_step.REUSE_ZERO_BUFFER = True
from pallas_kernels.config import tuned
from textclf.backends import device_description
from textclf.model import init_params, init_optimizer
config = tuned(4096, device_description())
params = pallas_step.pad_params(init_params(jax.random.PRNGKey(0), 32754, 128, 4), config)
steps, cap = 4, 2**19
args = (jnp.zeros((steps, cap), jnp.int32), jnp.zeros((steps, cap)), jnp.zeros((steps, cap), jnp.int32),
        jnp.zeros((steps, 4096), jnp.int32), jnp.ones((steps, 4096)), jnp.full((steps,), 0.1))
for opt in ("adam", "sgd"):
    f = jax.jit(lambda p, o, *a: pallas_step.pallas_epoch(p, o, *a, n_classes=4, momentum=0.9, weight_decay=0.0, config=config, optimizer=opt))
    hlo = f.lower(params, init_optimizer(opt, params), *args).compile().as_text()
    kp = params.w1.shape[0]
    copies = [l.strip()[:160] for l in hlo.splitlines() if re.search(r"\bcopy(-start)?\(", l) and f"[4096,{kp}]" in l]
    print(opt, "copies of the dense buffer:", len(copies), *copies, sep="\n  ")

"""The ``looped_kv`` family: the KV cache of looped models and its cross-loop compression
(theory note ``looped_kv.md``).

Stages: ``spec`` (the pydantic model, with ``parts`` and ``serving``), ``hf_config``
(Hugging Face configs -> model fields: ``hf_defaults`` for the keys a config leaves out,
``hf_families`` and ``hf_experts`` for the readers, ``hf_layouts`` for the readers by
model_type), ``direct`` (a config.json -> a spec, for ``infoflow predict config.json``),
``formulas`` (values and sympy expressions), ``expressions`` (formula -> printed text and
LaTeX, cached in the shipped ``expressions.json``), ``weights`` (quantised weights -> bytes),
``predict`` (spec -> predictions), ``budget`` (what fits a device), ``compare`` (every way of
storing the cache side by side) and ``capacity`` (the capacity plot).

Glossary:

- looped (weight-tied) model: a core block of R layers run T times (``loops``), with P
  prelude and C coda layers run once; P/R/C/T: ``prelude_layers``/``layers``/
  ``coda_layers``/``loops``;
- n_kv, d_head: KV heads and head width; bytes: bytes per cached number of the cache dtype;
- LLA (looped latent attention): per token, core layer and KV head, the T per-loop keys (and
  values) stored as one latent of rank r_k (r_v); LLA-2D: one latent for all KV heads too;
- head-axis latent: the MLA-style control (one latent across heads, per loop); final-loop
  reuse: keep only the last loop's K/V;
- rho: the compression ratio of the looped part (full bytes over compressed); the whole-cache
  ratio counts the uncompressed prelude and coda too;
- MLA: multi-head latent attention (DeepSeek-V2/V3), a latent the cache keeps instead of K/V;
- budget: the memory the cache may use; capacity: the largest batch (or context) that fits.
"""

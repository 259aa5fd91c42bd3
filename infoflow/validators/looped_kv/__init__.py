"""The looped_kv validator: ``experiment`` (the model a spec needs), ``model`` (a small
looped decoder with a per-loop cache), ``ouro`` (Ouro-style checkpoints), ``codec`` (folds,
the SVD codec, the latent store, distillation), ``measure``, ``claims``, ``report`` and
``plots``, tied together in ``validator``."""

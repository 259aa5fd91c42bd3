"""The ``looped_kv`` family: KV cache of looped models and its cross-loop compression.

Stages: ``spec`` (the pydantic model), ``hf_config`` (Hugging Face configs -> model fields),
``formulas`` (values and sympy expressions), ``expressions`` (formula -> printed text and LaTeX,
cached), ``predict`` (spec -> predictions).
"""

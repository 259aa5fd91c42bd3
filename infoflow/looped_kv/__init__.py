"""The ``looped_kv`` family: KV cache of looped models and its cross-loop compression.

Stages: ``spec`` (the pydantic model), ``hf_config`` (Hugging Face configs -> model fields),
``formulas`` (sympy expressions), ``predict`` (spec -> predictions).
"""

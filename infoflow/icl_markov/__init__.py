"""The ``icl_markov`` family: memorization vs generalization phases of in-context learning
on K Markov chains, and the thresholds K*_1 and K*_2.

Stages: ``spec`` (the pydantic model), ``calibration`` (the shipped constants and their
provenance; reading and writing calibration files), ``predict`` (spec -> predictions),
``fit`` (validation results -> a new calibration file).
"""

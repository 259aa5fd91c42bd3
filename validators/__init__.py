"""Experiments that check infoflow's predictions by training real models (torch).

Shipped as ``infoflow.validators``. The theory package ``infoflow`` never imports this
package at start-up, so ``infoflow predict`` runs without torch installed.
"""

"""The bugs of examples/bugs.py planted in the NumPy port (examples/plain_numpy.py), one at a time.

Each factory has its PyTorch twin's name; ``rw check`` must name the same first wrong quantity
(``bugs.FIRST_WRONG``; tests/test_check_ports.py compares them).

    rw check examples/bugs_numpy.py:transposed_V
"""

from __future__ import annotations

from plain_numpy import functional


def softmax_over_tokens_only(config):
    return functional(config, keys_only=True)


def transposed_V(config):
    return functional(config, transposed=True)


def eps_outside_log(config):
    return functional(config, eps_outside=True)


def eta_twice_on_W(config):
    return functional(config, w_updates=2)


def unit_norm_positions(config):
    return functional(config, unit_norm=True)


def summed_loss(config):
    return functional(config, reduce="sum")

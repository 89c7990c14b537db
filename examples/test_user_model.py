"""Checking your own implementation under plain pytest: subclass ConformanceTests, name the factory once.

    pytest examples/test_user_model.py                       # defaults: t = 0..2, 10 examples, float64
    pytest examples/test_user_model.py --rwcheck-examples 3 --rwcheck-dtype float32

Each test is one property drawn by hypothesis inside the test, so a failure is shrunk to a minimal
configuration and replayed from hypothesis' example database on the next run.
"""

from plain_torch import model, training

from rwtoolkit.analyses.check import ConformanceTests


class TestPlainModule(ConformanceTests):
    """Protocol (a): the nn.Module; the checker trains it."""

    factory = staticmethod(model)


class TestPlainTrainingLoop(ConformanceTests):
    """Protocol (b): our own training loop, on finite tasks and circle walks."""

    factory = staticmethod(training)
    task = "any"

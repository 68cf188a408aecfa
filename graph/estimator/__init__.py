"""`tf.estimator` on dualgrad's graph engine: Estimator, EstimatorSpec, RunConfig, ModeKeys,
the canned DNNClassifier and DNNRegressor, and `inputs.numpy_input_fn`.

See estimator.py for what a call builds and runs, canned.py for the canned networks, and
docs/tf1-compat.md ("Estimators") for what is and is not provided.
"""
from ..contrib import ModeKeys
from . import inputs
from .canned import DNNClassifier, DNNRegressor
from .estimator import Estimator
from .spec import EstimatorSpec, RunConfig

__all__ = ["Estimator", "EstimatorSpec", "RunConfig", "ModeKeys", "DNNClassifier",
           "DNNRegressor", "inputs"]

"""`tf.estimator` on dualgrad's graph engine: Estimator, EstimatorSpec, RunConfig, ModeKeys,
the canned DNN and linear classifiers and regressors, `inputs.numpy_input_fn`, and the
session-run hooks (the same classes as `train.*`, as TF 1.15 exports them in both places).

See estimator.py for what a call builds and runs, canned.py for the canned networks, and
docs/tf1-compat.md ("Estimators") for what is and is not provided.
"""
from .spec import ModeKeys
from ..hooks import (CheckpointSaverHook, CheckpointSaverListener, LoggingTensorHook,
                     NanLossDuringTrainingError, NanTensorHook, SessionRunArgs,
                     SessionRunContext, SessionRunHook, SessionRunValues, StopAtStepHook)
from . import inputs, tpu
from .canned import DNNClassifier, DNNRegressor, LinearClassifier, LinearRegressor
from .estimator import Estimator
from .spec import EstimatorSpec, RunConfig

__all__ = ["Estimator", "EstimatorSpec", "RunConfig", "ModeKeys", "DNNClassifier",
           "DNNRegressor", "LinearClassifier", "LinearRegressor", "inputs", "tpu", "SessionRunHook",
           "SessionRunArgs", "SessionRunContext",
           "SessionRunValues", "StopAtStepHook", "LoggingTensorHook", "NanTensorHook",
           "NanLossDuringTrainingError", "CheckpointSaverHook", "CheckpointSaverListener"]

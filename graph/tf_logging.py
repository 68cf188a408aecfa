"""`tf.logging`: TF1's logging functions over the standard `logging` module, on a logger of
dualgrad's own ("dualgrad.graph", messages as `INFO:tensorflow:...` on stderr, as TF1's);
the root logger and other loggers are left alone. Default verbosity WARN, as TF1.

>>> from dualgrad.graph import tf_logging as logging
>>> logging.set_verbosity(logging.INFO); logging.get_verbosity() == logging.INFO
True
"""
from __future__ import annotations

import logging as _logging
import sys

__all__ = ["DEBUG", "INFO", "WARN", "ERROR", "FATAL", "debug", "info", "warn", "warning", "error",
           "fatal", "log", "vlog", "log_every_n", "log_first_n", "log_if", "set_verbosity",
           "get_verbosity", "get_logger"]

DEBUG, INFO, WARN, ERROR, FATAL = (_logging.DEBUG, _logging.INFO, _logging.WARN, _logging.ERROR,
                                   _logging.FATAL)
_LOGGER = None
_COUNTS: dict = {}


class _Stderr(_logging.StreamHandler):
    """Writes to `sys.stderr` as it is at each message, not as it was when the logger was
    made: a stderr redirected later (contextlib.redirect_stderr, pytest's capture) gets the
    messages, as with TF's handler."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):
        pass


def get_logger():
    global _LOGGER
    if _LOGGER is None:
        logger = _logging.getLogger("dualgrad.graph")
        if not logger.handlers:
            handler = _Stderr()
            handler.setFormatter(_logging.Formatter("%(levelname)s:tensorflow:%(message)s"))
            logger.addHandler(handler)
            logger.propagate = False
            logger.setLevel(WARN)
        _LOGGER = logger
    return _LOGGER


def log(level, msg, *args, **kw):
    get_logger().log(level, msg, *args, **kw)


def debug(msg, *args, **kw):
    log(DEBUG, msg, *args, **kw)


def info(msg, *args, **kw):
    log(INFO, msg, *args, **kw)


def warning(msg, *args, **kw):
    log(WARN, msg, *args, **kw)


warn = warning


def error(msg, *args, **kw):
    log(ERROR, msg, *args, **kw)


def fatal(msg, *args, **kw):
    log(FATAL, msg, *args, **kw)


def vlog(level, msg, *args, **kw):
    log(level, msg, *args, **kw)


def log_if(level, msg, condition, *args):
    if condition:
        log(level, msg, *args)


def log_every_n(level, msg, n, *args):
    key = (msg, "every")
    count = _COUNTS.get(key, 0)
    _COUNTS[key] = count + 1
    log_if(level, msg, count % n == 0, *args)


def log_first_n(level, msg, n, *args):
    key = (msg, "first")
    count = _COUNTS.get(key, 0)
    _COUNTS[key] = count + 1
    log_if(level, msg, count < n, *args)


def set_verbosity(v):
    get_logger().setLevel(v)


def get_verbosity():
    return get_logger().getEffectiveLevel()

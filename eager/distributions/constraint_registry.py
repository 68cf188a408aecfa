"""torch.distributions.biject_to and transform_to: the transform from unconstrained reals onto
a constraint's region, looked up by the constraint's class (a bijection for biject_to, any
onto map for transform_to), with register() for new ones.

>>> from dualgrad import eager as torch
>>> from dualgrad.eager.distributions import biject_to, constraints
>>> t = biject_to(constraints.interval(-1.0, 2.0))
>>> round(t(torch.tensor(0.0)).item(), 4)
0.5
"""
from __future__ import annotations

import numbers

from . import constraints
from .transforms import (AffineTransform, CatTransform, ComposeTransform, CorrCholeskyTransform,
                         ExpTransform, IndependentTransform, LowerCholeskyTransform,
                         PositiveDefiniteTransform, SigmoidTransform, SoftmaxTransform,
                         StackTransform, StickBreakingTransform, identity_transform)

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    """Constraint classes to transform factories."""

    def __init__(self):
        self._registry = {}
        super().__init__()

    def register(self, constraint, factory=None):
        if factory is None:
            return lambda factory: self.register(constraint, factory)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not isinstance(constraint, type) or not issubclass(constraint, constraints.Constraint):
            raise TypeError(f"Expected constraint to be either a Constraint subclass or "
                            f"instance, but got {constraint}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint):
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(
                f"Cannot transform {type(constraint).__name__} constraints") from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _both(constraint):
    def decorate(factory):
        biject_to.register(constraint, factory)
        transform_to.register(constraint, factory)
        return factory
    return decorate


@_both(constraints.real)
def _to_real(constraint):
    return identity_transform


@biject_to.register(constraints.independent)
def _biject_to_independent(constraint):
    return IndependentTransform(biject_to(constraint.base_constraint),
                                constraint.reinterpreted_batch_ndims)


@transform_to.register(constraints.independent)
def _transform_to_independent(constraint):
    return IndependentTransform(transform_to(constraint.base_constraint),
                                constraint.reinterpreted_batch_ndims)


@_both(constraints.greater_than)
@_both(constraints.greater_than_eq)
def _to_greater_than(constraint):
    return ComposeTransform([ExpTransform(), AffineTransform(constraint.lower_bound, 1)])


@_both(constraints.less_than)
def _to_less_than(constraint):
    return ComposeTransform([ExpTransform(), AffineTransform(constraint.upper_bound, -1)])


@_both(constraints.interval)
@_both(constraints.half_open_interval)
def _to_interval(constraint):
    lo, hi = constraint.lower_bound, constraint.upper_bound
    if isinstance(lo, numbers.Number) and lo == 0 and isinstance(hi, numbers.Number) and hi == 1:
        return SigmoidTransform()
    return ComposeTransform([SigmoidTransform(), AffineTransform(lo, hi - lo)])


@biject_to.register(constraints.simplex)
def _biject_to_simplex(constraint):
    return StickBreakingTransform()


@transform_to.register(constraints.simplex)
def _transform_to_simplex(constraint):
    return SoftmaxTransform()


@transform_to.register(constraints.lower_cholesky)
def _transform_to_lower_cholesky(constraint):
    return LowerCholeskyTransform()


@transform_to.register(constraints.positive_definite)
@transform_to.register(constraints.positive_semidefinite)
def _transform_to_positive_definite(constraint):
    return PositiveDefiniteTransform()


@_both(constraints.corr_cholesky)
def _to_corr_cholesky(constraint):
    return CorrCholeskyTransform()


def _each(registry, transform):
    def factory(constraint):
        if transform is CatTransform:
            return CatTransform([registry(c) for c in constraint.cseq], constraint.dim,
                                constraint.lengths)
        return StackTransform([registry(c) for c in constraint.cseq], constraint.dim)
    return factory


for _registry in (biject_to, transform_to):
    _registry.register(constraints.cat, _each(_registry, CatTransform))
    _registry.register(constraints.stack, _each(_registry, StackTransform))

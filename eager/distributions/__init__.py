"""torch.distributions: the families VAE, reinforcement-learning and Bayesian scripts use, with
torch's constructors, constraints (`arg_constraints`, `support`, argument and value
validation with torch's ValueError), `sample` / `rsample` (reparameterised where torch's is:
Gamma, Beta, Dirichlet and StudentT through implicit gradients of the gamma draw),
`log_prob`, `entropy`, `mean`, `mode`, `variance`, `cdf` / `icdf`, `enumerate_support`,
`expand`, `transforms` and `kl_divergence` with `register_kl`. Samples come from dualgrad's
generator, so they differ from torch's draws; everything else agrees.

>>> from dualgrad import eager as torch
>>> from dualgrad.eager.distributions import Normal, kl_divergence
>>> p, q = Normal(torch.tensor(0.0), torch.tensor(1.0)), Normal(torch.tensor(1.0), torch.tensor(2.0))
>>> round(p.log_prob(torch.tensor(0.5)).item(), 4), round(kl_divergence(p, q).item(), 4)
(-1.0439, 0.4431)
"""
from __future__ import annotations

import sys
import types

from . import constraints, transforms, utils
from .constraint_registry import biject_to, transform_to
from .continuous import Cauchy, Exponential, Laplace, Normal, Uniform
from .discrete import (Bernoulli, Binomial, Categorical, Geometric, Multinomial,
                       OneHotCategorical, OneHotCategoricalStraightThrough, Poisson)
from .distribution import Distribution, ExponentialFamily
from .extra import (ContinuousBernoulli, FisherSnedecor, GeneralizedPareto, HalfCauchy,
                    InverseGamma, Kumaraswamy, NegativeBinomial, Pareto, VonMises, Weibull)
from .gamma import Beta, Chi2, Dirichlet, Gamma, StudentT
from .kl import kl_divergence, register_kl
from .mvn import LKJCholesky, LowRankMultivariateNormal, MultivariateNormal, Wishart
from .transformed import (ExpRelaxedCategorical, Gumbel, HalfNormal, Independent, LogNormal,
                          LogisticNormal, LogitRelaxedBernoulli, MixtureSameFamily,
                          RelaxedBernoulli, RelaxedOneHotCategorical, TransformedDistribution)
from .transforms import (AbsTransform, AffineTransform, CatTransform, ComposeTransform,
                         CorrCholeskyTransform,
                         CumulativeDistributionTransform, ExpTransform, IndependentTransform,
                         LowerCholeskyTransform, PositiveDefiniteTransform, PowerTransform,
                         ReshapeTransform, SigmoidTransform, SoftmaxTransform, SoftplusTransform,
                         StackTransform, StickBreakingTransform, TanhTransform, Transform,
                         identity_transform)

__all__ = ["AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "CatTransform",
           "Categorical", "Cauchy", "Chi2", "ComposeTransform", "ContinuousBernoulli",
           "CorrCholeskyTransform", "CumulativeDistributionTransform", "Dirichlet",
           "Distribution", "ExpRelaxedCategorical", "ExpTransform", "Exponential",
           "ExponentialFamily", "FisherSnedecor", "Gamma", "GeneralizedPareto", "Geometric",
           "Gumbel", "HalfCauchy", "HalfNormal", "Independent", "IndependentTransform",
           "InverseGamma", "Kumaraswamy", "LKJCholesky", "Laplace", "LogNormal", "LogisticNormal",
           "LogitRelaxedBernoulli", "LowRankMultivariateNormal", "LowerCholeskyTransform",
           "MixtureSameFamily", "Multinomial", "MultivariateNormal", "NegativeBinomial", "Normal",
           "OneHotCategorical", "OneHotCategoricalStraightThrough", "Pareto", "Poisson",
           "PositiveDefiniteTransform", "PowerTransform", "RelaxedBernoulli",
           "RelaxedOneHotCategorical", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform",
           "SoftplusTransform", "StackTransform", "StickBreakingTransform", "StudentT",
           "TanhTransform", "Transform", "TransformedDistribution", "Uniform", "VonMises",
           "Weibull", "Wishart", "biject_to", "constraints", "identity_transform",
           "kl_divergence", "register_kl", "transform_to", "transforms"]

# torch.distributions' module paths (`from torch.distributions.normal import Normal`) that are
# not modules of ours (distribution, gamma, kl, constraints, transforms, ... are): one module
# object each, holding the names torch's module exports
MODULE_PATHS = {
    "bernoulli": ("Bernoulli",), "beta": ("Beta",), "binomial": ("Binomial",),
    "categorical": ("Categorical",), "cauchy": ("Cauchy",), "chi2": ("Chi2",),
    "continuous_bernoulli": ("ContinuousBernoulli",), "dirichlet": ("Dirichlet",),
    "exp_family": ("ExponentialFamily",), "exponential": ("Exponential",),
    "fishersnedecor": ("FisherSnedecor",), "generalized_pareto": ("GeneralizedPareto",),
    "geometric": ("Geometric",), "gumbel": ("Gumbel",), "half_cauchy": ("HalfCauchy",),
    "half_normal": ("HalfNormal",), "independent": ("Independent",),
    "inverse_gamma": ("InverseGamma",), "kumaraswamy": ("Kumaraswamy",), "laplace": ("Laplace",),
    "lkj_cholesky": ("LKJCholesky",), "log_normal": ("LogNormal",),
    "logistic_normal": ("LogisticNormal",),
    "lowrank_multivariate_normal": ("LowRankMultivariateNormal",),
    "mixture_same_family": ("MixtureSameFamily",), "multinomial": ("Multinomial",),
    "multivariate_normal": ("MultivariateNormal",), "negative_binomial": ("NegativeBinomial",),
    "normal": ("Normal",),
    "one_hot_categorical": ("OneHotCategorical", "OneHotCategoricalStraightThrough"),
    "pareto": ("Pareto",), "poisson": ("Poisson",),
    "relaxed_bernoulli": ("LogitRelaxedBernoulli", "RelaxedBernoulli"),
    "relaxed_categorical": ("ExpRelaxedCategorical", "RelaxedOneHotCategorical"),
    "studentT": ("StudentT",), "transformed_distribution": ("TransformedDistribution",),
    "uniform": ("Uniform",), "von_mises": ("VonMises",), "weibull": ("Weibull",),
    "wishart": ("Wishart",),
}


def _module_path(name, exports):
    module = types.ModuleType(f"{__name__}.{name}",
                              f"torch.distributions.{name}: {', '.join(exports)}")
    module.__all__ = list(exports)
    for export in exports:
        setattr(module, export, globals()[export])
    sys.modules.setdefault(module.__name__, module)
    return sys.modules[module.__name__]


globals().update({name: _module_path(name, exports) for name, exports in MODULE_PATHS.items()})

# torch.distributions' names dualgrad does not provide (docs/pytorch-compat.md): none left; a
# name torch does not have either is an AttributeError in torch's words
NOT_PROVIDED: tuple = ()


def __getattr__(name):
    raise AttributeError(f"module 'torch.distributions' has no attribute '{name}'")

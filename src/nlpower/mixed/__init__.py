"""The one mixed-model core under the three engines (lmer, glmer, clmm).

* :mod:`.layout` -- the random-effects terms' ``theta`` layout (lme4's order);
* :mod:`.fdiff` -- finite-difference gradients and Hessians (lme4's
  ``deriv12`` and the cheaper rules the optimisers use), with warm starts
  for objectives that solve for conditional modes;
* :mod:`.quadrature` -- the Gauss-Hermite rule and adaptive quadrature
  over the levels of one scalar random-effects term (``nAGQ > 1``);
* :mod:`.relfactor` -- a term's relative covariance factor ``Lambda(theta)``
  and the bounds of its ``theta``;
* :mod:`.blocked` -- the weighted blocked factorisation of
  ``Lambda'Z'WZ Lambda + I`` (log-determinant, solves, selected inverse)
  under glmer's PIRLS and clmm's Laplace, and the rule that picks its
  strategy;
* :mod:`.pairs` -- its strategy for large crossed designs whose rest
  compresses (the Schur complement from pairs of observations);
* :mod:`.native` -- the factorisation's structured strategies (grouping
  blocks with cross-products formed once, block 1's batched factor, dense
  or sparse Schur products, the peeled rest, the uncoupled lead), which the
  Gaussian fitter (:mod:`nlpower.lmm.native`) runs at unit weights and
  :mod:`.native.weighted` on each PIRLS or Laplace step's weighted
  cross-products; :mod:`.blockedfactor` the blocked factor both build;
* :mod:`.blocked_batch` -- the same factorisation stacked over the
  responses of a batch of power replicates (scalar terms; glmer's
  ``refit_many``), and :mod:`.pairs_batch` its pair strategy, taken where
  one fit of the design takes pairs;
* :mod:`.modes` -- the Newton loop with step halving for their conditional
  modes, and its per-level form (one scalar term, many points at once).
"""

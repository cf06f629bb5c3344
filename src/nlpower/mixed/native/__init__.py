"""The blocked factorisation's structured strategies, shared by every family.

The random-effects terms as grouping blocks with lme4's term order and
``theta`` layout (:mod:`.blocks`, cross-products formed once), the batched
factor of the largest grouping factor (:mod:`.block1`), and the factor of
the whole system with its strategies chosen from the design's structure
(:mod:`.deviance`: dense or sparse Schur products of block 1, active-column
patterns; :mod:`.rest`, the peeled rest; :mod:`.lead`, the uncoupled lead;
:mod:`.grouped`, grouped levels; :mod:`.lower`, the sparse lower build),
with the memory they need refused up front (:mod:`.memory`) and BLAS run
single-threaded on their small dense blocks (:mod:`._blas`).

The Gaussian fitter (:mod:`nlpower.lmm.native`) runs them at unit weights on
its profiled deviance; :mod:`.weighted` runs them on a PIRLS or Laplace
step's weighted cross-products for glmer and clmm, where the layout's rule
(:func:`nlpower.mixed.blocked.native_rule`) takes them.
"""

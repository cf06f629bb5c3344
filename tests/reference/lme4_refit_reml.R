# Why nlpower's lme4 engine does not use lme4::refit() for REML refits.
#
# lme4 1.1-31's refit.merMod rebuilds the response module with
# mkRespMod(..., REML = isREML(object)), i.e. REML = TRUE = 1, while lmer()
# uses REML = p (the number of fixed effects).  For p > 1 a REML refit then
# optimises the wrong criterion.  This script shows it on simulated data:
# the refit's REML criterion is above the direct fit's on the same response,
# and r2@resp$REML is 1 instead of 2.
#
#   Rscript --vanilla tests/reference/lme4_refit_reml.R
suppressMessages(library(lme4))
set.seed(1)
d <- expand.grid(w = factor(1:10), i = factor(1:24))
d$x <- ifelse(runif(nrow(d)) < .5, -1, 1)
y1 <- rnorm(10)[d$w] + rnorm(24)[d$i] + rnorm(nrow(d))
y2 <- rnorm(10)[d$w] * 2 + rnorm(24)[d$i] + rnorm(nrow(d))
d$y <- y1
f1 <- lmer(y ~ x + (1 | w) + (1 | i), d, REML = TRUE)
r2 <- refit(f1, newresp = y2)
d$y <- y2
f2 <- lmer(y ~ x + (1 | w) + (1 | i), d, REML = TRUE)
cat("lme4", format(packageVersion("lme4")), "\n")
cat("REML criterion, refit vs direct fit:", REMLcrit(r2), REMLcrit(f2), "\n")
cat("resp$REML, refit vs original:", r2@resp$REML, f1@resp$REML, "\n")

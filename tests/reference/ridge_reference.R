# lme4 on a 2-system paired design with the paper's model, the exact ridge of
# (system || g) (tests/lmm/native/test_native_ridge.py: the native fit through the
# reduced model must reach lme4's deviance and agree on the identified quantities).
#
# Usage (from the repository root):
#
#   Rscript --vanilla tests/reference/ridge_reference.R
#
# reads tests/reference/data/ridge2.csv (70 workers, 150 items, 2 systems, 600 ratings;
# written by test_native_ridge._data) and writes tests/reference/ridge_reference.json:
# per fit (ML and REML, lme4's defaults and converged tightly with xtol_abs = ftol_abs =
# 1e-12) the criterion, the fixed effects and their standard errors, sigma and per grouping
# factor the covariance of the per-system effects, Sigma + s0^2 11' (the identified part).
# Checked with R 4.2.2, lme4 1.1-31.

suppressPackageStartupMessages({
  library(lme4)
  library(jsonlite)
})

file_arg <- grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)
script_dir <- if (length(file_arg)) dirname(normalizePath(sub("^--file=", "", file_arg))) else "tests/reference"
d <- read.csv(file.path(script_dir, "data", "ridge2.csv"), stringsAsFactors = FALSE)
for (v in c("system", "worker", "item")) d[[v]] <- factor(as.character(d[[v]]))
f <- rating ~ system + (system || worker) + (system || item)

one <- function(REML, tight) {
  ctl <- if (tight) lmerControl(optCtrl = list(xtol_abs = 1e-12, ftol_abs = 1e-12))
         else lmerControl()
  fit <- suppressMessages(suppressWarnings(
    lmer(f, d, REML = REML, contrasts = list(system = "contr.sum"), control = ctl)))
  vc <- VarCorr(fit)
  M <- list()
  for (g in c("worker", "item")) {
    parts <- vc[names(vc) %in% c(g, paste0(g, ".1"))]      # (1 | g) and (0 + system | g)
    dims <- sapply(parts, nrow)
    s0 <- parts[[which(dims == 1)]][1, 1]
    S <- as.matrix(parts[[which(dims == 2)]])
    M[[g]] <- unname(S + s0)
  }
  list(REML = REML, tight = tight,
       criterion = if (REML) unname(getME(fit, "devcomp")$cmp["REML"]) else deviance(fit),
       fixef = unname(fixef(fit)), se = unname(sqrt(diag(as.matrix(vcov(fit))))),
       sigma = sigma(fit), M = M)
}

out <- list(ML = one(FALSE, FALSE), ML_tight = one(FALSE, TRUE),
            REML = one(TRUE, FALSE), REML_tight = one(TRUE, TRUE))
writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE),
           file.path(script_dir, "ridge_reference.json"))

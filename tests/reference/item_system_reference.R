# lme4 on the many-system model with an item-by-system interaction,
#   rating ~ system + (1 | worker) + (1 | item) + (1 | item:system)   (ML, contr.sum)
# and the same with (1 | worker:system) added
# (tests/ratings/test_ratings_interactions.py: fit_ratings' sigma_item:system,
# sigma_worker:system, sigma0w, sigma0i, sigma, fixed effects and log-likelihood).
#
# Usage (from the repository root):
#
#   Rscript --vanilla tests/reference/item_system_reference.R
#
# reads tests/reference/data/item_system3.csv (8 workers, 40 items, 3 systems A, B, C;
# 576 ratings: 60 % of a fully crossed simulation of that model, tau = 0.12, item SD 0.08,
# worker SD 0.1, sigma 0.15) and writes tests/reference/item_system_reference.json.
# System levels are ordered B, C, A (the baseline A last, as fit_ratings orders them for
# contr.sum).  Checked with R 4.2.2, lme4 1.1-31.

suppressPackageStartupMessages({
  library(lme4)
  library(jsonlite)
})

file_arg <- grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)
script_dir <- if (length(file_arg)) dirname(normalizePath(sub("^--file=", "", file_arg))) else "tests/reference"
d <- read.csv(file.path(script_dir, "data", "item_system3.csv"), stringsAsFactors = FALSE)
d$system <- factor(d$system, levels = c("B", "C", "A"))
d$worker <- factor(d$worker)
d$item <- factor(d$item)

one <- function(f) {
  fit <- lmer(f, d, REML = FALSE, contrasts = list(system = "contr.sum"),
              control = lmerControl(optCtrl = list(xtol_abs = 1e-12, ftol_abs = 1e-12)))
  vc <- as.data.frame(VarCorr(fit))
  list(formula = paste(deparse(f), collapse = ""), loglik = as.numeric(logLik(fit)),
       fixef = unname(fixef(fit)), sigma = sigma(fit),
       sd = setNames(as.list(vc$sdcor[!is.na(vc$grp) & vc$grp != "Residual"]),
                     vc$grp[!is.na(vc$grp) & vc$grp != "Residual"]))
}

out <- list(
  item = one(rating ~ system + (1 | worker) + (1 | item) + (1 | item:system)),
  both = one(rating ~ system + (1 | worker) + (1 | worker:system) + (1 | item) + (1 | item:system)))
writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE),
           file.path(script_dir, "item_system_reference.json"))

# Conditional modes and conditional SDs of random effects (lme4's ranef(condVar = TRUE),
# ordinal's condVar), for nlpower's fit.ranef(condvar=True) (tests/lmm/test_mixedfit.py).
#
# Usage (from the repository root):
#
#   Rscript --vanilla tests/reference/ranef_condvar_reference.R
#
# writes tests/reference/ranef_condvar_reference.json: per case the formula and the rows of
# as.data.frame(ranef(fit, condVar = TRUE)) (grpvar, term, grp, condval, condsd); for the
# clmm case the modes and sqrt(condVar) of ordinal::clmm.  Checked with R 4.2.2,
# lme4 1.1-31, ordinal 2022.11-16.

suppressPackageStartupMessages({
  library(lme4)
  library(ordinal)
  library(jsonlite)
})

file_arg <- grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)
script_dir <- if (length(file_arg)) dirname(normalizePath(sub("^--file=", "", file_arg))) else "tests/reference"
data_dir <- file.path(script_dir, "data")
read <- function(name, factors) {
  d <- read.csv(file.path(data_dir, paste0(name, ".csv")), stringsAsFactors = FALSE)
  for (v in factors) d[[v]] <- factor(as.character(d[[v]]))
  d
}
rows <- function(fit) {
  r <- as.data.frame(ranef(fit, condVar = TRUE))
  list(grpvar = as.character(r$grpvar), term = as.character(r$term),
       grp = as.character(r$grp), condval = r$condval, condsd = r$condsd)
}

out <- list()
sleep <- read("sleepstudy", "Subject")
f <- "Reaction ~ Days + (Days | Subject)"
out$sleepstudy_REML <- c(list(formula = f, REML = TRUE), rows(lmer(as.formula(f), sleep)))
pen <- read("penicillin", c("plate", "sample"))
f <- "diameter ~ 1 + (1 | plate) + (1 | sample)"
out$penicillin_ML <- c(list(formula = f, REML = FALSE),
                       rows(lmer(as.formula(f), pen, REML = FALSE)))
cbpp <- read("cbpp", c("herd", "period"))
fit <- glmer(prop ~ period + (1 | herd), cbpp, family = binomial, weights = size)
out$cbpp_binomial <- c(list(formula = "prop ~ period + (1 | herd)"), rows(fit))
wine <- read("wine", c("temp", "contact", "judge"))
wine$rating <- factor(wine$rating, ordered = TRUE)
fm <- clmm(rating ~ temp + contact + (1 | judge), data = wine)
re <- ranef(fm, condVar = TRUE)$judge
out$wine_clmm <- list(formula = "rating ~ temp + contact + (1 | judge)",
                      grpvar = rep("judge", nrow(re)), term = rep("(Intercept)", nrow(re)),
                      grp = rownames(re), condval = re[[1]],
                      condsd = sqrt(attr(re, "condVar")[[1]]))
out$versions <- list(R = R.version.string, lme4 = format(packageVersion("lme4")),
                     ordinal = format(packageVersion("ordinal")))
writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE),
           file.path(script_dir, "ranef_condvar_reference.json"))

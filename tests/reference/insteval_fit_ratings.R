# lme4 reference for nlpower.fit_ratings on InstEval (lme4's own data set).
#
# Students (s) rate lecturers (d) on a 1..5 scale; `service` (0/1: was the
# lecture a service course for another department) plays the "system".
# fit_ratings(read_ratings(..., worker="s", item="d", system="service",
#                          rating="y", scale=(1, 5)))
# fits, with the default baseline (the first system label in sorted order,
# "0") placed LAST so that it is the level that gets -1 under contr.sum:
#
#   rating ~ system + (system || worker) + (system || item),   REML = FALSE
#   rating = (y - 1) / 4,   levels(system) = c("1", "0"),   contr.sum
#
# lme4 expands (system || g) into (1 | g) + (0 + system | g): an intercept
# plus an unstructured 2 x 2 covariance over the two service indicators.
#
# Usage (from the repository root):
#   Rscript --vanilla tests/reference/insteval_fit_ratings.R [out.json]
# Writes tests/reference/insteval_fit_ratings.json by default.
# Checked with R 4.2.2, lme4 1.1-31.

suppressMessages({
  library(lme4)
  library(jsonlite)
})

args <- commandArgs(trailingOnly = TRUE)
out <- if (length(args) >= 1) args[[1]] else "tests/reference/insteval_fit_ratings.json"

csv <- "tests/reference/data/insteval.csv.gz"
if (file.exists(csv)) {
  raw <- read.csv(csv, colClasses = "character")
  source <- csv
} else {
  raw <- lme4::InstEval
  source <- "lme4::InstEval"
}
dat <- data.frame(
  worker = factor(as.character(raw$s)),
  item = factor(as.character(raw$d)),
  system = factor(as.character(raw$service), levels = c("1", "0")),
  rating = (as.numeric(as.character(raw$y)) - 1) / 4
)
stopifnot(nrow(dat) == 73421, !anyNA(dat))

form <- rating ~ system + (system || worker) + (system || item)
t0 <- proc.time()[["elapsed"]]
fit <- lmer(form, data = dat, REML = FALSE, contrasts = list(system = "contr.sum"))
elapsed <- proc.time()[["elapsed"]] - t0

vc <- as.data.frame(VarCorr(fit))
vc$var1[is.na(vc$var1)] <- ""
vc$var2[is.na(vc$var2)] <- ""

res <- list(
  description = paste(
    "lme4 fit of fit_ratings' model on InstEval: rating = (y-1)/4,",
    "system = service with levels c('1','0') (baseline '0' last), contr.sum, ML"
  ),
  data_source = source,
  formula = deparse(form),
  REML = FALSE,
  contrasts = "contr.sum",
  system_levels = levels(dat$system),
  nobs = nobs(fit),
  ngrps = as.list(ngrps(fit)),
  fixef = as.list(fixef(fit)),
  se = as.list(sqrt(diag(as.matrix(vcov(fit))))),
  sigma = sigma(fit),
  theta = unname(getME(fit, "theta")),
  theta_names = names(getME(fit, "theta")),
  varcorr = vc,
  deviance = deviance(fit),
  loglik = as.numeric(logLik(fit)),
  singular = isSingular(fit),
  messages = fit@optinfo$conv$lme4$messages,
  optimizer = fit@optinfo$optimizer,
  elapsed_seconds = elapsed,
  R_version = R.version.string,
  lme4_version = as.character(packageVersion("lme4"))
)
writeLines(toJSON(res, auto_unbox = TRUE, digits = NA, pretty = TRUE, null = "null"), out)
cat("wrote", out, "in", elapsed, "s\n")

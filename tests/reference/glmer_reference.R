# lme4's side of nlpower's glmer validation (tests/glmm/, benchmarks/validation_corpus.py).
#
# Usage (from the repository root):
#
#   Rscript --vanilla tests/reference/glmer_reference.R
#
# writes the data sets to tests/reference/data/ (cbpp.csv, grouseticks.csv,
# VerbAgg.csv, glmm_crossed.csv: so tests read them without R) and
# tests/reference/glmer_reference.json: per case, lme4 1.1-31's glmer fit with
# its default settings (two stages; bobyqa then Nelder_Mead): logLik, deviance,
# -2 logLik, AIC, BIC, fixed effects, their standard errors (vcov(fit), lme4's
# Hessian-based default), theta, the SDs and correlations of VarCorr, the
# convergence messages and the fit time (median of 3 system.time runs).
#
# The simulated crossed case: 60 workers x 40 items x 2 systems (x = +-0.5), every
# worker rates every item under one system (alternating), logit link, SDs of
# Card et al. (2020) Table 16's "high variance" order on the latent scale.
# Checked with R 4.2.2, lme4 1.1-31.

suppressPackageStartupMessages({
  library(lme4)
  library(jsonlite)
})

file_arg <- grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)
script_dir <- if (length(file_arg)) dirname(normalizePath(sub("^--file=", "", file_arg))) else "tests/reference"
data_dir <- file.path(script_dir, "data")

# --- data ------------------------------------------------------------------------
cb <- cbpp
cb$prop <- cb$incidence / cb$size
write.csv(cb, file.path(data_dir, "cbpp.csv"), row.names = FALSE)

gt <- grouseticks
gt$cHEIGHT <- gt$HEIGHT - mean(gt$HEIGHT)
gt$YEAR <- paste0("Y", as.character(gt$YEAR))
gt$YEAR <- factor(gt$YEAR)
write.csv(gt[, c("INDEX", "TICKS", "BROOD", "HEIGHT", "YEAR", "LOCATION", "cHEIGHT")],
          file.path(data_dir, "grouseticks.csv"), row.names = FALSE)

va <- VerbAgg
va$r2num <- as.integer(va$r2 == "Y")
write.csv(va[, c("Anger", "Gender", "item", "resp", "id", "btype", "situ", "mode", "r2", "r2num")],
          file.path(data_dir, "VerbAgg.csv"), row.names = FALSE)

set.seed(20261124)
nw <- 60; ni <- 40
sim <- expand.grid(worker = sprintf("w%02d", 1:nw), item = sprintf("i%02d", 1:ni),
                   stringsAsFactors = FALSE)
wi <- match(sim$worker, sprintf("w%02d", 1:nw)); ii <- match(sim$item, sprintf("i%02d", 1:ni))
sim$x <- ifelse((wi + ii) %% 2 == 0, 0.5, -0.5)
bw <- rnorm(nw, 0, 0.8); sw <- rnorm(nw, 0, 0.4)
bi <- rnorm(ni, 0, 0.6); si <- rnorm(ni, 0, 0.5)
eta <- 0.2 + 0.6 * sim$x + bw[wi] + sw[wi] * sim$x + bi[ii] + si[ii] * sim$x
sim$y <- rbinom(nrow(sim), 1, plogis(eta))
write.csv(sim, file.path(data_dir, "glmm_crossed.csv"), row.names = FALSE)

# --- fits ------------------------------------------------------------------------
fit_case <- function(name, expr_fun) {
  msgs <- character(0)
  fit <- withCallingHandlers(expr_fun(), warning = function(w) {
    msgs <<- c(msgs, conditionMessage(w)); invokeRestart("muffleWarning")
  }, message = function(m) { msgs <<- c(msgs, conditionMessage(m)); invokeRestart("muffleMessage") })
  times <- sapply(1:3, function(i) system.time(suppressWarnings(suppressMessages(expr_fun())))[["elapsed"]])
  vc <- as.data.frame(VarCorr(fit))
  list(
    name = name,
    formula = paste(deparse(formula(fit), width.cutoff = 500L), collapse = " "),
    family = family(fit)$family, link = family(fit)$link,
    nAGQ = fit@devcomp$dims[["nAGQ"]],
    loglik = as.numeric(logLik(fit)),
    df = attr(logLik(fit), "df"),
    deviance = deviance(fit),
    m2loglik = -2 * as.numeric(logLik(fit)),
    aic = AIC(fit), bic = BIC(fit),
    nobs = nobs(fit),
    fixef = as.list(fixef(fit)),
    se = as.list(sqrt(diag(as.matrix(vcov(fit))))),
    theta = as.list(getME(fit, "theta")),
    vc_grp = vc$grp, vc_var1 = ifelse(is.na(vc$var1), "", vc$var1),
    vc_var2 = ifelse(is.na(vc$var2), "", vc$var2), vc_sdcor = vc$sdcor,
    messages = msgs,
    conv_messages = as.list(fit@optinfo$conv$lme4$messages),
    singular = isSingular(fit),
    time = median(times)
  )
}

cases <- list(
  fit_case("cbpp", function() glmer(cbind(incidence, size - incidence) ~ period + (1 | herd),
                                    data = cb, family = binomial)),
  fit_case("cbpp_weights", function() glmer(prop ~ period + (1 | herd), weights = size,
                                            data = cb, family = binomial)),
  fit_case("cbpp_probit", function() glmer(prop ~ period + (1 | herd), weights = size,
                                           data = cb, family = binomial(link = "probit"))),
  fit_case("cbpp_cloglog", function() glmer(prop ~ period + (1 | herd), weights = size,
                                            data = cb, family = binomial(link = "cloglog"))),
  fit_case("cbpp_agq9", function() glmer(prop ~ period + (1 | herd), weights = size,
                                         data = cb, family = binomial, nAGQ = 9)),
  fit_case("cbpp_agq25", function() glmer(prop ~ period + (1 | herd), weights = size,
                                          data = cb, family = binomial, nAGQ = 25)),
  fit_case("cbpp_nagq0", function() glmer(prop ~ period + (1 | herd), weights = size,
                                          data = cb, family = binomial, nAGQ = 0)),
  fit_case("cbpp_poisson_offset", function() glmer(incidence ~ period + (1 | herd),
                                                   offset = log(size), data = cb, family = poisson)),
  fit_case("grouseticks", function() glmer(TICKS ~ YEAR + cHEIGHT + (1 | BROOD) + (1 | INDEX) + (1 | LOCATION),
                                           data = gt, family = poisson)),
  fit_case("verbagg_crossed", function() glmer(r2 ~ Anger + Gender + btype + situ + (1 | id) + (1 | item),
                                               data = va, family = binomial)),
  fit_case("verbagg_slope", function() glmer(r2 ~ Anger + Gender + btype + situ + (1 | id) + (1 + Gender | item),
                                             data = va, family = binomial)),
  fit_case("crossed_sim", function() glmer(y ~ x + (1 + x || worker) + (1 + x || item),
                                           data = sim, family = binomial))
)
names(cases) <- vapply(cases, function(cs) cs$name, "")
out <- list(R = R.version.string, lme4 = format(packageVersion("lme4")), cases = cases)
writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, pretty = TRUE),
           file.path(script_dir, "glmer_reference.json"))

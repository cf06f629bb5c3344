# lme4's glmer.nb and glmmTMB's nbinom2: the references of nlpower's negative
# binomial GLMM (glmer(..., family="negative_binomial"); tests/glmm/test_negbin.py).
#
# Usage (from the repository root):
#
#   Rscript --vanilla tests/reference/negbin_reference.R
#
# reads tests/reference/data/grouseticks.csv (written by glmer_reference.R),
# writes the simulated crossed count design to tests/reference/data/negbin_crossed.csv
# and tests/reference/negbin_reference.json: per case and package, logLik,
# fixed effects and their standard errors, the random-effect SDs, lme4's theta
# (relative covariance factor), the negative binomial dispersion theta
# (Var = mu + mu^2 / theta: glmer.nb's getME(, "glmer.nb.theta"), glmmTMB's
# sigma()), the messages and the fit time (median of 3 runs).
#
# Cases:
#   grouseticks: TICKS ~ YEAR + sHEIGHT + (1 | BROOD) + (1 | LOCATION), sHEIGHT = scale(HEIGHT);
#   crossed: errors ~ system + (1 | worker) + (1 | item), 20 workers x 60 items,
#     every worker counts the errors of every item's output of one of three systems
#     (rotating), NB counts with dispersion theta = 2.
#
# lme4's glmer.nb alternates a one-dimensional optimisation of the dispersion
# with glmer fits at fixed dispersion; its Laplace approximation uses the
# expected (Fisher) weights of PIRLS, as every glmer with a non-canonical
# link. glmmTMB maximises its Laplace approximation (the observed Hessian of
# the conditional log-density) over every parameter jointly. The two
# approximations differ, so their logLiks differ slightly at the same data;
# the JSON also holds each package's logLik evaluated at the other's optimum
# where that is cheap (lme4's deviance function at glmmTMB's estimates).
# Checked with R 4.2.2, lme4 1.1-31, glmmTMB 1.1.5 (Debian's r-cran-glmmtmb).

suppressPackageStartupMessages({
  library(lme4)
  library(glmmTMB)
  library(jsonlite)
})

file_arg <- grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)
script_dir <- if (length(file_arg)) dirname(normalizePath(sub("^--file=", "", file_arg))) else "tests/reference"
data_dir <- file.path(script_dir, "data")

# --- data ------------------------------------------------------------------------
gt <- read.csv(file.path(data_dir, "grouseticks.csv"),
               colClasses = c(BROOD = "character", LOCATION = "character", INDEX = "character"))
gt$YEAR <- factor(gt$YEAR)
gt$sHEIGHT <- as.numeric(scale(gt$HEIGHT))

set.seed(20261128)
nw <- 20; ni <- 60
sim <- expand.grid(item = sprintf("i%02d", 1:ni), worker = sprintf("w%02d", 1:nw),
                   stringsAsFactors = FALSE)
wi <- match(sim$worker, sprintf("w%02d", 1:nw)); ii <- match(sim$item, sprintf("i%02d", 1:ni))
systems <- c("A", "B", "C")
sim$system <- systems[(wi + ii) %% 3 + 1]
bw <- rnorm(nw, 0, 0.5); bi <- rnorm(ni, 0, 0.4)
eff <- c(A = 0, B = 0.3, C = -0.2)
mu <- exp(0.5 + eff[sim$system] + bw[wi] + bi[ii])
sim$errors <- rnbinom(nrow(sim), size = 2, mu = mu)
sim <- sim[, c("worker", "item", "system", "errors")]
write.csv(sim, file.path(data_dir, "negbin_crossed.csv"), row.names = FALSE)
sim <- read.csv(file.path(data_dir, "negbin_crossed.csv"), stringsAsFactors = FALSE)

# --- fits ------------------------------------------------------------------------
quiet <- function(expr_fun) {
  msgs <- character(0)
  fit <- withCallingHandlers(expr_fun(), warning = function(w) {
    msgs <<- c(msgs, conditionMessage(w)); invokeRestart("muffleWarning")
  }, message = function(m) { msgs <<- c(msgs, conditionMessage(m)); invokeRestart("muffleMessage") })
  times <- sapply(1:3, function(i) system.time(suppressWarnings(suppressMessages(expr_fun())))[["elapsed"]])
  list(fit = fit, msgs = msgs, time = median(times))
}

vc_sds <- function(vc) {
  out <- list()
  for (g in names(vc)) out[[g]] <- as.numeric(attr(vc[[g]], "stddev"))
  out
}

lme4_case <- function(formula, data) {
  q <- quiet(function() glmer.nb(formula, data = data))
  fit <- q$fit
  list(
    loglik = as.numeric(logLik(fit)),
    df = attr(logLik(fit), "df"),
    fixef = as.list(fixef(fit)),
    se = as.list(sqrt(diag(as.matrix(vcov(fit))))),
    theta = as.list(getME(fit, "theta")),
    sd = vc_sds(VarCorr(fit)),
    nb_theta = getME(fit, "glmer.nb.theta"),
    messages = q$msgs, time = q$time
  )
}

tmb_case <- function(formula, data, lme4_fit_fun) {
  q <- quiet(function() glmmTMB(formula, data = data, family = nbinom2))
  fit <- q$fit
  sds <- vc_sds(VarCorr(fit)$cond)
  beta <- fixef(fit)$cond
  nbt <- sigma(fit)
  # lme4's objective (Fisher-weight Laplace) at glmmTMB's optimum: a glmer at
  # glmmTMB's dispersion, its deviance function evaluated at glmmTMB's estimates
  g <- suppressWarnings(glmer(formula, data = data, family = MASS::negative.binomial(nbt)))
  dfun <- suppressWarnings(glmer(formula, data = data, family = MASS::negative.binomial(nbt),
                                 devFunOnly = TRUE))
  th <- unlist(sds[names(getME(g, "cnms"))])
  lme4_at_tmb <- -dfun(c(th, beta)) / 2
  list(
    loglik = as.numeric(logLik(fit)),
    df = attr(logLik(fit), "df"),
    fixef = as.list(beta),
    se = as.list(sqrt(diag(as.matrix(vcov(fit)$cond)))),
    sd = sds,
    nb_theta = nbt,
    lme4_loglik_at_this = lme4_at_tmb,
    messages = q$msgs, time = q$time
  )
}

case <- function(name, formula, data) {
  list(name = name, formula = paste(deparse(formula, width.cutoff = 500L), collapse = " "),
       nobs = nrow(data), lme4 = lme4_case(formula, data), glmmTMB = tmb_case(formula, data))
}

cases <- list(
  case("grouseticks", TICKS ~ YEAR + sHEIGHT + (1 | BROOD) + (1 | LOCATION), gt),
  case("crossed", errors ~ system + (1 | worker) + (1 | item), sim)
)
names(cases) <- vapply(cases, function(cs) cs$name, "")
out <- list(R = R.version.string, lme4 = format(packageVersion("lme4")),
            glmmTMB = format(packageVersion("glmmTMB")), cases = cases)
writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, pretty = TRUE),
           file.path(script_dir, "negbin_reference.json"))

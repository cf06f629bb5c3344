# lme4's side of nlpower's engine validation corpus (benchmarks/validation_corpus.py).
#
# Usage (from the repository root):
#
#   Rscript --vanilla tests/reference/validation_corpus.R --export
#       writes lmerTest's real rating data sets ham, TVbo and carrots to
#       tests/reference/data/ (committed; the corpus reads them from there).
#
#   Rscript --vanilla tests/reference/validation_corpus.R --manifest=DIR/manifest.json --out=OUT.json
#       fits every case of the manifest (written by benchmarks/validation_corpus.py:
#       one CSV per case, its formula, factor level orders and contrasts) with
#       lme4::lmer(REML = FALSE), lme4 1.1-31's defaults (nloptwrap BOBYQA, checkConv),
#       and writes, per case: the ML deviance, fixed effects, every term's
#       covariance matrix (sigma^2 Lambda Lambda', as VarCorr), sigma, the fit time
#       (system.time around lmer only) and lme4's convergence messages.
#       With --tight: BOBYQA's xtol_abs = 1e-12, ftol_abs = 1e-14 instead of 1e-8, 1e-8
#       (the corpus uses these fits as the reference for parameters where lme4's
#       default fit stopped above the native optimum on a flat ridge).
#
# Factors are built with the manifest's level order (the corpus shuffles them on
# purpose), contrasts are contr.sum / contr.treatment as nlpower's "sum" /
# "treatment".  Checked with R 4.2.2, lme4 1.1-31, lmerTest 3.1-3.

suppressPackageStartupMessages({
  library(lme4)
  library(jsonlite)
})

args <- commandArgs(trailingOnly = TRUE)
get_arg <- function(name, default) {
  hit <- grep(paste0("^--", name, "="), args, value = TRUE)
  if (length(hit) == 0) return(default)
  sub(paste0("^--", name, "="), "", hit[length(hit)])
}
file_arg <- grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)
script_dir <- if (length(file_arg)) dirname(normalizePath(sub("^--file=", "", file_arg))) else "tests/reference"

if ("--export" %in% args) {
  suppressPackageStartupMessages(library(lmerTest))
  for (nm in c("ham", "TVbo", "carrots")) {
    d <- get(nm)
    write.csv(d, file.path(script_dir, "data", paste0(nm, ".csv")), row.names = FALSE)
  }
  quit(status = 0)
}

tight <- "--tight" %in% args   # converge far past lme4's defaults (the parameter reference)
manifest_file <- get_arg("manifest", "")
out_file <- get_arg("out", "-")
man <- fromJSON(manifest_file, simplifyVector = FALSE)
base <- dirname(manifest_file)

fit_case <- function(cs) {
  d <- read.csv(file.path(base, cs$csv), stringsAsFactors = FALSE)
  for (f in names(cs$levels)) {
    lv <- unlist(cs$levels[[f]])
    d[[f]] <- factor(as.character(d[[f]]), levels = lv)
  }
  ctr <- NULL
  if (length(cs$contrasts)) {
    ctr <- lapply(cs$contrasts, function(k) if (k == "sum") "contr.sum" else "contr.treatment")
  }
  msgs <- character(0)
  tm <- system.time(
    m <- withCallingHandlers(
      lmer(as.formula(cs$formula), data = d, REML = FALSE, contrasts = ctr,
           control = if (tight) lmerControl(optCtrl = list(xtol_abs = 1e-12, ftol_abs = 1e-14,
                                                           maxeval = 1e6)) else lmerControl()),
      warning = function(w) { msgs <<- c(msgs, conditionMessage(w)); invokeRestart("muffleWarning") },
      message = function(w) { msgs <<- c(msgs, conditionMessage(w)); invokeRestart("muffleMessage") }
    )
  )[["elapsed"]]
  vc <- VarCorr(m)
  terms <- lapply(names(vc), function(g) {
    v <- vc[[g]]
    list(grp = g, cnames = colnames(v), cov = as.vector(v), q = ncol(v))
  })
  list(
    name = cs$name,
    deviance = as.numeric(deviance(m)),
    loglik = as.numeric(logLik(m)),
    fixef = as.list(fixef(m)),
    sigma = sigma(m),
    theta = as.vector(getME(m, "theta")),
    terms = terms,
    time = tm,
    messages = msgs,
    optimizer_messages = m@optinfo$conv$lme4$messages,
    gradient = as.vector(m@optinfo$derivs$gradient),
    hessian = as.vector(m@optinfo$derivs$Hessian),
    ysum = sum(d[[all.vars(as.formula(cs$formula))[1]]])
  )
}

res <- lapply(man$cases, function(cs) {
  r <- fit_case(cs)
  message(sprintf("%s: lme4 %.2f s", cs$name, r$time))
  r
})
js <- toJSON(list(lme4 = as.character(packageVersion("lme4")), R = R.version.string, cases = res),
             auto_unbox = TRUE, digits = I(15), null = "null")
if (out_file == "-") cat(js, "\n") else writeLines(js, out_file)

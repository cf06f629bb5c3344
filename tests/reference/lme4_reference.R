# lme4 reference values for nlpower's engine tests.
#
# Usage (from the repository root):
#
#   Rscript --vanilla tests/reference/lme4_reference.R
#       exports the datasets to tests/reference/data/ and writes
#       tests/reference/lme4_reference.json (all cases; ~1-3 min, InstEval
#       dominates).
#
#   Rscript --vanilla tests/reference/lme4_reference.R \
#       --cases=sleepstudy_ML,crossed2_ML --data-dir=/tmp/x --out=-
#       re-runs only the named cases, writing their data to /tmp/x and the
#       JSON to stdout (used by tests/lmm/test_lme4_agreement.py to check that
#       the pinned values still match what R gives).
#
# Deterministic: the two simulated datasets come from set.seed(); every fit
# is done on the data *as read back from the exported CSV*, so the Python
# tests fit exactly the same numbers.  Checked with R 4.2.2, lme4 1.1-31,
# Matrix 1.5-3, jsonlite (Debian r-cran-jsonlite).

suppressPackageStartupMessages({
  library(lme4)
  library(jsonlite)
})

# ---------------------------------------------------------------- arguments
args <- commandArgs(trailingOnly = TRUE)
get_arg <- function(name, default) {
  hit <- grep(paste0("^--", name, "="), args, value = TRUE)
  if (length(hit) == 0) return(default)
  sub(paste0("^--", name, "="), "", hit[length(hit)])
}
file_arg <- grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)
script_dir <- if (length(file_arg)) dirname(normalizePath(sub("^--file=", "", file_arg))) else "tests/reference"
data_dir <- get_arg("data-dir", file.path(script_dir, "data"))
out_file <- get_arg("out", file.path(script_dir, "lme4_reference.json"))
wanted <- get_arg("cases", "")
wanted <- if (nzchar(wanted)) strsplit(wanted, ",")[[1]] else character(0)
dir.create(data_dir, showWarnings = FALSE, recursive = TRUE)

# ---------------------------------------------------------------- datasets
# Each dataset: a function building the data frame, the file name, and the
# columns that are factors (written as strings; read back as factors).

sim_crossed2 <- function() {
  # (a) two systems, fully crossed: every worker rates every item under both
  # systems.  Card et al. (2020) App. H.3 model with Table 16 "high variance"
  # SDs, beta0 = 0.5, beta1 = 0.1, x = -1 (system A) / +1 (system B).
  set.seed(20201116)
  n_w <- 12; n_i <- 60
  sd_w0 <- 0.01; sd_w1 <- 0.11; sd_i0 <- 0.04; sd_i1 <- 0.14; sigma <- 0.26
  w0 <- rnorm(n_w, 0, sd_w0); w1 <- rnorm(n_w, 0, sd_w1)
  i0 <- rnorm(n_i, 0, sd_i0); i1 <- rnorm(n_i, 0, sd_i1)
  d <- expand.grid(system = c("A", "B"), item = seq_len(n_i), worker = seq_len(n_w),
                   stringsAsFactors = FALSE)
  d$x <- ifelse(d$system == "A", -1, 1)
  d$rating <- 0.5 + w0[d$worker] + i0[d$item] +
    (0.1 + w1[d$worker] + i1[d$item]) * d$x + rnorm(nrow(d), 0, sigma)
  data.frame(worker = sprintf("w%02d", d$worker), item = sprintf("i%03d", d$item),
             system = d$system, x = d$x, rating = round(d$rating, 6))
}

sim_crossed4 <- function() {
  # (b) four systems, paired items, fully crossed: every worker rates every
  # item's output from each of the 4 systems.  Parameters after Card et al.
  # Tables 13-15, Dathathri et al. (PPLM) row: beta0 0.62, sum-coded system
  # effects 0.04, -0.05, -0.03 (system D = 0.04); worker SDs (intercept, per
  # system) 0.02, 0.04, 0.05, 0.05, 0.05; item SDs 0.02, 0.16, 0.19, 0.16,
  # 0.16; sigma 0.16.  (The table's zero intercept SDs are replaced by 0.02
  # so that the generating model is not itself on the boundary.)
  set.seed(20201117)
  n_w <- 10; n_i <- 40; K <- 4
  beta <- c(0.04, -0.05, -0.03); beta <- c(beta, -sum(beta))
  w0 <- rnorm(n_w, 0, 0.02); i0 <- rnorm(n_i, 0, 0.02)
  wk <- matrix(rnorm(n_w * K, 0, rep(c(0.04, 0.05, 0.05, 0.05), each = n_w)), n_w, K)
  ik <- matrix(rnorm(n_i * K, 0, rep(c(0.16, 0.19, 0.16, 0.16), each = n_i)), n_i, K)
  d <- expand.grid(system = seq_len(K), item = seq_len(n_i), worker = seq_len(n_w))
  d$rating <- 0.62 + beta[d$system] + w0[d$worker] + i0[d$item] +
    wk[cbind(d$worker, d$system)] + ik[cbind(d$item, d$system)] + rnorm(nrow(d), 0, 0.16)
  data.frame(worker = sprintf("w%02d", d$worker), item = sprintf("i%03d", d$item),
             system = LETTERS[d$system], rating = round(d$rating, 6))
}

datasets <- list(
  sleepstudy = list(
    file = "sleepstudy.csv", factors = "Subject",
    make = function() {
      d <- lme4::sleepstudy
      data.frame(Reaction = d$Reaction, Days = d$Days, Subject = as.character(d$Subject))
    }),
  penicillin = list(
    file = "penicillin.csv", factors = c("plate", "sample"),
    make = function() {
      d <- lme4::Penicillin
      data.frame(diameter = d$diameter, plate = as.character(d$plate),
                 sample = as.character(d$sample))
    }),
  insteval = list(
    # Only the columns the model uses.  s, d, dept are grouping ids; service is
    # a 0/1 factor (lecture given for another department), response y in 1..5.
    file = "insteval.csv.gz", factors = c("service", "s", "d", "dept"),
    make = function() {
      d <- lme4::InstEval
      data.frame(y = d$y, service = as.character(d$service), s = as.character(d$s),
                 d = as.character(d$d), dept = as.character(d$dept))
    }),
  crossed2 = list(file = "crossed2.csv", factors = c("worker", "item", "system"),
                  make = sim_crossed2),
  crossed4 = list(file = "crossed4.csv", factors = c("worker", "item", "system"),
                  make = sim_crossed4)
)

cases <- list(
  list(id = "sleepstudy_ML", data = "sleepstudy", REML = FALSE,
       formula = "Reaction ~ Days + (Days | Subject)"),
  list(id = "sleepstudy_REML", data = "sleepstudy", REML = TRUE,
       formula = "Reaction ~ Days + (Days | Subject)"),
  list(id = "penicillin_REML", data = "penicillin", REML = TRUE,
       formula = "diameter ~ 1 + (1 | plate) + (1 | sample)"),
  list(id = "penicillin_ML", data = "penicillin", REML = FALSE,
       formula = "diameter ~ 1 + (1 | plate) + (1 | sample)"),
  list(id = "insteval_ML", data = "insteval", REML = FALSE,
       formula = "y ~ service + (1 | s) + (1 | d) + (1 | dept)"),
  list(id = "insteval_REML", data = "insteval", REML = TRUE,
       formula = "y ~ service + (1 | s) + (1 | d) + (1 | dept)"),
  list(id = "crossed2_ML", data = "crossed2", REML = FALSE,
       formula = "rating ~ x + (1 + x || worker) + (1 + x || item)"),
  list(id = "crossed4_ML", data = "crossed4", REML = FALSE,
       formula = "rating ~ system + (system || worker) + (system || item)",
       contrasts = list(system = "contr.sum"))
)
if (length(wanted)) {
  unknown <- setdiff(wanted, vapply(cases, `[[`, "", "id"))
  if (length(unknown)) stop("unknown case(s): ", paste(unknown, collapse = ", "))
  cases <- Filter(function(cs) cs$id %in% wanted, cases)
}

# ---------------------------------------------------------------- export + read back
read_back <- function(ds) {
  path <- file.path(data_dir, ds$file)
  d <- ds$make()
  if (grepl("\\.gz$", path)) {
    con <- gzfile(path, "w")
    write.csv(d, con, row.names = FALSE)
    close(con)
  } else {
    write.csv(d, path, row.names = FALSE)
  }
  back <- read.csv(path, colClasses = setNames(rep("character", length(ds$factors)), ds$factors))
  for (f in ds$factors) back[[f]] <- factor(back[[f]])
  back
}
needed <- unique(vapply(cases, `[[`, "", "data"))
frames <- lapply(setNames(needed, needed), function(nm) read_back(datasets[[nm]]))

# ---------------------------------------------------------------- fit + extract
named <- function(x) as.list(setNames(unname(x), names(x)))

extract <- function(cs) {
  dat <- frames[[cs$data]]
  ctr <- cs$contrasts
  fit <- lmer(as.formula(cs$formula), data = dat, REML = cs$REML, contrasts = ctr)
  V <- as.matrix(vcov(fit))
  vc <- as.data.frame(VarCorr(fit))
  conv <- fit@optinfo$conv$lme4$messages
  list(
    id = cs$id,
    formula = cs$formula,
    REML = cs$REML,
    data = file.path("data", datasets[[cs$data]]$file),
    factors = I(datasets[[cs$data]]$factors),
    contrasts = if (is.null(ctr)) structure(list(), names = character(0)) else ctr,
    objective = if (cs$REML) REMLcrit(fit) else deviance(fit),
    deviance = if (cs$REML) NULL else deviance(fit),
    reml_criterion = if (cs$REML) REMLcrit(fit) else NULL,
    logLik = as.numeric(logLik(fit)),
    AIC = AIC(fit), BIC = BIC(fit),
    fixef = named(fixef(fit)),
    se = named(sqrt(diag(V))),
    vcov = I(unname(V)),
    sigma = sigma(fit),
    theta = I(unname(getME(fit, "theta"))),
    theta_names = I(names(getME(fit, "theta"))),
    varcorr = vc,
    nobs = nobs(fit),
    ngrps = named(ngrps(fit)),
    isSingular = isSingular(fit),
    optimizer = fit@optinfo$optimizer,
    feval = fit@optinfo$feval,
    conv_messages = I(if (is.null(conv)) character(0) else conv)
  )
}

results <- lapply(cases, function(cs) {
  message("fitting ", cs$id, " ...")
  t0 <- proc.time()[["elapsed"]]
  r <- extract(cs)
  message(sprintf("  done in %.1f s (objective %.6f)", proc.time()[["elapsed"]] - t0, r$objective))
  r
})
names(results) <- vapply(cases, `[[`, "", "id")

out <- list(
  generated_by = "tests/reference/lme4_reference.R",
  R_version = R.version.string,
  lme4_version = format(packageVersion("lme4")),
  Matrix_version = format(packageVersion("Matrix")),
  cases = results
)
json <- toJSON(out, auto_unbox = TRUE, digits = NA, pretty = TRUE, na = "null", null = "null")
if (out_file == "-") {
  cat(json, "\n")
} else {
  writeLines(json, out_file)
  message("wrote ", out_file)
}

# simr's side of nlpower's "power for any term of a fitted model" checks
# (powerSim, extend, powerCurve, fcompare) and of benchmarks/bench_simr.py.
#
# Usage (from the repository root; simr is not in Debian, see README.md here):
#
#   Rscript --vanilla tests/reference/simr_reference.R
#
# writes tests/reference/data/simdata.csv (simr's `simdata`, 30 rows),
# tests/reference/data/cake.csv (lme4's `cake`, 270 rows) and
# tests/reference/simr_reference.json: per case, the model (formula, family,
# REML, data, every parameter simr simulates from), the test (simr's call, the
# term, the method), nsim, the seed, the number of significant replicates
# (p < alpha = 0.05), simr's power estimate and its 95% Clopper-Pearson interval
# (simr's confint(), binom's "exact"), the replicates simr logged as warnings
# or errors (simr counts an error as "not significant"), the refits lme4 flagged
# as singular, and simr's wall-clock and CPU time per replicate.
#
# Options (for benchmarks/bench_simr.py --live and quick checks):
#   --cases=a_poisson_z,b_lmm_t   run only these cases
#   --nsim=20                     override every case's nsim
#   --out=path.json               write there instead (data CSVs are then not written)
#
# simr simulates each replicate from the model's parameters with new random
# effects (lme4's simulate(formula, newparams=, newdata=), use.u = FALSE), then
# refits the model's own call to the new response (update() of the full call,
# formula parsing included) and applies the test.  powerCurve() simulates nsim
# responses on the full data once and fits every break to a subset of the same
# responses (common random numbers across breaks); a break is the number of
# distinct values of `along` kept, smallest first.
#
# Checked with R 4.2.2, lme4 1.1-31, simr 1.0.7 (github:cran/simr), binom 1.1-1.1,
# lmerTest 3.1-3, pbkrtest 0.5.2.

suppressPackageStartupMessages({
  library(simr)
  library(jsonlite)
})
simrOptions(progress = FALSE)

file_arg <- grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)
script_dir <- if (length(file_arg)) dirname(normalizePath(sub("^--file=", "", file_arg))) else "tests/reference"
opt <- function(name, default = NULL) {
  a <- grep(paste0("^--", name, "="), commandArgs(trailingOnly = TRUE), value = TRUE)
  if (length(a)) sub(paste0("^--", name, "="), "", a[1]) else default
}
only <- opt("cases")
only <- if (is.null(only)) NULL else strsplit(only, ",")[[1]]
nsim_override <- opt("nsim")
out_path <- opt("out", file.path(script_dir, "simr_reference.json"))
pinned_run <- is.null(opt("out"))

BASE_SEED <- 20261128L
ALPHA <- 0.05

# --- data ------------------------------------------------------------------------
if (pinned_run) {
  write.csv(simdata, file.path(script_dir, "data", "simdata.csv"), row.names = FALSE)
  write.csv(cake, file.path(script_dir, "data", "cake.csv"), row.names = FALSE)
}

# 10 workers x 100 items, fully crossed, one rating per (worker, item); the
# binary `system` (0/1) alternates so every worker rates 50 items under each
# system and every item gets 5 ratings under each.
crossed_design <- function() {
  d <- expand.grid(worker = sprintf("w%02d", 1:10), item = sprintf("i%03d", 1:100),
                   stringsAsFactors = TRUE)
  d$system <- as.numeric((as.integer(d$worker) + as.integer(d$item)) %% 2 == 0)
  d
}

# --- helpers ---------------------------------------------------------------------
# Wrap a simr test so every refit it sees is checked for singularity (keyed by
# the number of rows, which tells powerCurve's breaks apart); the p-value is the
# wrapped test's.
singular_log <- new.env()
counting <- function(test) {
  f <- function(fit) {
    key <- as.character(nobs(fit))
    old <- if (is.null(singular_log[[key]])) c(0L, 0L) else singular_log[[key]]
    singular_log[[key]] <- old + c(1L, as.integer(isSingular(fit)))
    test(fit)
  }
  attributes(f) <- attributes(test)
  f
}

log_summary <- function(df) {
  if (is.null(df) || !nrow(df)) return(list(replicates = 0L, messages = setNames(list(), character(0))))
  msgs <- table(substr(df$message, 1, 120))
  list(replicates = length(unique(df$index)),
       messages = as.list(setNames(as.integer(msgs), names(msgs))))
}

params_of <- function(model) {
  vc <- as.data.frame(VarCorr(model))
  vc <- vc[vc$grp != "Residual", ]
  out <- list(fixef = as.list(fixef(model)),
              sd = as.list(setNames(vc$sdcor, ifelse(is.na(vc$var2), paste(vc$grp, vc$var1, sep = "|"),
                                                     paste(vc$grp, vc$var1, vc$var2, sep = "|")))),
              theta = I(unname(getME(model, "theta"))))
  if (isLMM(model)) out$sigma <- sigma(model)
  out
}

power_record <- function(ps, key) {
  ci <- confint(ps)
  sing <- singular_log[[key]]
  list(successes = ps$x, nsim = ps$n, power = ps$x / ps$n,
       ci95 = unname(as.numeric(ci)), nrow = ps$nrow,
       n_pvalue_na = sum(is.na(ps$pval)),
       warnings = log_summary(ps$warnings), errors = log_summary(ps$errors),
       singular_refits = if (is.null(sing)) 0L else sing[2],
       tested_refits = if (is.null(sing)) 0L else sing[1])
}

timing_record <- function(timing, fits) {
  cpu <- timing[["user.self"]] + timing[["sys.self"]]
  list(elapsed_s = timing[["elapsed"]], cpu_s = cpu, replicates_timed = fits,
       s_per_replicate = timing[["elapsed"]] / fits, cpu_s_per_replicate = cpu / fits)
}

run_powersim <- function(case, model, test, nsim, seed) {
  rm(list = ls(singular_log), envir = singular_log)
  set.seed(seed)
  ps <- suppressMessages(powerSim(model, counting(test), nsim = nsim))
  stopifnot(ps$n == nsim)
  modifyList(modifyList(case, list(seed = seed, test_description = attr(test, "description")(model, model))),
             c(power_record(ps, as.character(ps$nrow)), timing_record(ps$timing, nsim)))
}

nsim_for <- function(n) if (is.null(nsim_override)) n else as.integer(nsim_override)

# --- cases -------------------------------------------------------------------------
cases <- list()
add <- function(name, fun) if (is.null(only) || name %in% only) cases[[name]] <<- fun

pois_model <- function() {
  m <- glmer(z ~ x + (1 | g), family = "poisson", data = simdata)
  fixef(m)["x"] <- -0.05
  m
}
POIS <- list(data = "simdata", formula = "z ~ x + (1 | g)", family = "poisson",
             set = list(fixef = list(x = -0.05)),
             simr_model = 'glmer(z ~ x + (1|g), family = "poisson", data = simdata); fixef(m)["x"] <- -0.05')

add("a_poisson_z", function(seed) {
  m <- pois_model()
  run_powersim(modifyList(POIS, list(params = params_of(m), term = "x", method = "z",
                            simr_test = 'fixed("x", "z")',
                            note = "simr's vignette (introduction): Wald z from summary(glmer)")),
               m, fixed("x", "z"), nsim_for(1000), seed)
})
add("a_poisson_lr", function(seed) {
  m <- pois_model()
  run_powersim(modifyList(POIS, list(params = params_of(m), term = "x", method = "lr",
                            simr_test = 'fixed("x", "lr")',
                            note = "likelihood ratio: drop1(fit, ~x, test = 'Chisq'), chi-square 1 df")),
               m, fixed("x", "lr"), nsim_for(500), seed)
})

LMM_X <- 0.15
lmm_model <- function() {
  m <- lmer(y ~ x + (1 | g), data = simdata)
  fixef(m)["x"] <- LMM_X
  m
}
LMM <- list(data = "simdata", formula = "y ~ x + (1 | g)", family = "gaussian", REML = TRUE,
            set = list(fixef = list(x = LMM_X)),
            simr_model = sprintf('lmer(y ~ x + (1|g), data = simdata); fixef(m)["x"] <- %s', LMM_X))

add("b_lmm_t", function(seed) {
  m <- lmm_model()
  run_powersim(modifyList(LMM, list(params = params_of(m), term = "x", method = "t",
                           simr_test = 'fixed("x", "t")',
                           note = paste("t test with Satterthwaite denominator df: simr calls",
                                        "summary(lmerTest::as_lmerModLmerTest(fit), ddf = 'Satterthwaite')",
                                        "(simrOptions lmerTestDdf default) on each REML refit"))),
               m, fixed("x", "t"), nsim_for(1000), seed)
})
add("b_lmm_kr", function(seed) {
  m <- lmm_model()
  run_powersim(modifyList(LMM, list(params = params_of(m), term = "x", method = "kr",
                           simr_test = 'fixed("x", "kr")',
                           note = "Kenward-Roger F: drop1 with pbkrtest::KRmodcomp(fit, fit without x), REML")),
               m, fixed("x", "kr"), nsim_for(300), seed)
})

add("c_poisson_extend_x_lr", function(seed) {
  m <- extend(pois_model(), along = "x", n = 20)
  nd <- getData(m)
  run_powersim(modifyList(POIS, list(params = params_of(m), term = "x", method = "lr",
                            simr_test = 'fixed("x", "lr")', extend = list(along = "x", n = 20),
                            simr_model = paste(POIS$simr_model, '; extend(m, along = "x", n = 20)'),
                            extended_data = list(x = nd$x, g = as.character(nd$g)),
                            note = paste("extend along a continuous x: x = 1..20, the rows of x = k",
                                         "copied from simdata's x = ((k - 1) %% 10) + 1 (60 rows)"))),
               m, fixed("x", "lr"), nsim_for(300), seed)
})
add("c_lmm_extend_g_t", function(seed) {
  m <- extend(lmm_model(), along = "g", n = 6)
  nd <- getData(m)
  run_powersim(modifyList(LMM, list(params = params_of(m), term = "x", method = "t",
                           simr_test = 'fixed("x", "t")', extend = list(along = "g", n = 6),
                           simr_model = paste(LMM$simr_model, '; extend(m, along = "g", n = 6)'),
                           extended_data = list(x = nd$x, g = as.character(nd$g)),
                           note = paste("extend along the grouping factor: 6 levels a..f, new levels copy",
                                        "the rows of a, b, c in turn; each replicate draws new",
                                        "random effects for all 6 levels (60 rows); Satterthwaite t"))),
               m, fixed("x", "t"), nsim_for(200), seed)
})

add("d_poisson_curve_x_z", function(seed) {
  m <- extend(pois_model(), along = "x", n = 20)
  breaks <- c(5, 10, 15, 20)
  rm(list = ls(singular_log), envir = singular_log)
  set.seed(seed)
  nsim <- nsim_for(150)
  pc <- suppressMessages(powerCurve(m, counting(fixed("x", "z")), along = "x", breaks = breaks, nsim = nsim))
  per_break <- lapply(seq_along(breaks), function(i) {
    ps <- pc$ps[[i]]
    c(list(break_levels = breaks[i], largest_x = pc$xval[i]), power_record(ps, as.character(ps$nrow)))
  })
  rec <- modifyList(POIS, list(params = params_of(m), term = "x", method = "z", simr_test = 'fixed("x", "z")',
               simr_model = paste(POIS$simr_model, '; extend(m, along = "x", n = 20)'),
               simr_call = sprintf('powerCurve(m, fixed("x", "z"), along = "x", breaks = c(%s), nsim = %d)',
                                   paste(breaks, collapse = ", "), nsim),
               note = paste("break k keeps the rows with x <= k (3k rows); one set of nsim responses",
                            "simulated on all 60 rows and shared by every break"),
               nsim = nsim, seed = seed, breaks = breaks, curve = per_break))
  c(rec, timing_record(pc$timing, nsim * length(breaks)))
})

CAKE_SET <- c("recipeB:temp" = -0.05, "recipeC:temp" = 0.05)
add("e_cake_fcompare_lr", function(seed) {
  m <- lmer(angle ~ recipe * temp + (1 | recipe:replicate), data = cake, REML = FALSE)
  fixef(m)[names(CAKE_SET)] <- CAKE_SET
  run_powersim(list(data = "cake", formula = "angle ~ recipe * temp + (1 | recipe:replicate)",
                    family = "gaussian", REML = FALSE, set = list(fixef = as.list(CAKE_SET)),
                    simr_model = paste("lmer(angle ~ recipe * temp + (1|recipe:replicate), data = cake,",
                                       "REML = FALSE); fixef(m)[c('recipeB:temp', 'recipeC:temp')] <- c(-0.05, 0.05)"),
                    params = params_of(m), term = "recipe:temp", method = "lr",
                    simr_test = "fcompare(~ recipe + temp)",
                    note = paste("simr's vignette (examples): the 2-df recipe x temp interaction by a",
                                 "likelihood ratio against angle ~ recipe + temp + (1|recipe:replicate),",
                                 "both ML (anova(fit1, fit2)); recipe treatment-coded, temp numeric")),
               m, fcompare(~ recipe + temp), nsim_for(300), seed)
})

crossed_case <- function(family, fixefs, sds, nsim, seed) {
  d <- crossed_design()
  m <- suppressMessages(makeGlmer(y ~ system + (1 | worker) + (1 | item), family = family,
                                  fixef = fixefs, VarCorr = list(sds[["item"]]^2, sds[["worker"]]^2), data = d))
  vc <- as.data.frame(VarCorr(m))
  stopifnot(isTRUE(all.equal(vc$sdcor[vc$grp == "item"], sds[["item"]])),
            isTRUE(all.equal(vc$sdcor[vc$grp == "worker"], sds[["worker"]])))
  run_powersim(list(data = "crossed 10 workers x 100 items", formula = "y ~ system + (1 | worker) + (1 | item)",
                    family = family,
                    design = paste("expand.grid(worker = w01..w10, item = i001..i100);",
                                   "system = 1 if (worker index + item index) is even else 0 (1-based)"),
                    set = list(fixef = as.list(setNames(fixefs, c("(Intercept)", "system"))), sd = as.list(sds)),
                    simr_model = sprintf("makeGlmer(y ~ system + (1|worker) + (1|item), family = '%s', ...)", family),
                    params = params_of(m), term = "system", method = "z", simr_test = 'fixed("system", "z")',
                    note = "speed reference: Wald z; parameters stated, not fitted"),
               m, fixed("system", "z"), nsim, seed)
}
add("f_crossed_poisson_z", function(seed)
  crossed_case("poisson", c(0.5, 0.12), c(worker = 0.3, item = 0.5), nsim_for(100), seed))
add("f_crossed_binomial_z", function(seed)
  crossed_case("binomial", c(0, 0.3), c(worker = 0.5, item = 0.8), nsim_for(100), seed))

# --- run -----------------------------------------------------------------------------
ALL <- c("a_poisson_z", "a_poisson_lr", "b_lmm_t", "b_lmm_kr", "c_poisson_extend_x_lr", "c_lmm_extend_g_t",
         "d_poisson_curve_x_z", "e_cake_fcompare_lr", "f_crossed_poisson_z", "f_crossed_binomial_z")
header <- list(
  generated_by = "tests/reference/simr_reference.R",
  versions = list(R = R.version.string, lme4 = format(packageVersion("lme4")),
                  simr = format(packageVersion("simr")), lmerTest = format(packageVersion("lmerTest")),
                  pbkrtest = format(packageVersion("pbkrtest")), binom = format(packageVersion("binom"))),
  seeds = list(base = BASE_SEED, rule = "set.seed(base + position of the case in the list) before each case"),
  alpha = ALPHA,
  ci_method = "Clopper-Pearson (simr's confint(), binom.confint(method = 'exact'))",
  timing_note = paste("wall-clock and CPU (user + sys) of the whole powerSim/powerCurve call divided by the",
                      "replicates fitted (nsim, or nsim x breaks); one R process, OPENBLAS threads as set",
                      "by the caller; the machine was shared, so read ratios from one run"))
write_out <- function(results, elapsed, complete) {
  out <- c(header, list(
    date = format(Sys.time(), "%Y-%m-%d %H:%M UTC", tz = "UTC"),
    load_average = tryCatch(readLines("/proc/loadavg"), error = function(e) NA),
    openblas_threads = Sys.getenv("OPENBLAS_NUM_THREADS"),
    complete = complete, total_elapsed_s = elapsed, cases = results))
  writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, pretty = TRUE, null = "null"), out_path)
}
results <- list()
t_all <- proc.time()
for (name in names(cases)) {
  seed <- BASE_SEED + match(name, ALL)
  message(sprintf("[%s] %s ...", format(Sys.time(), "%H:%M:%S"), name))
  results[[name]] <- cases[[name]](seed)
  r <- results[[name]]
  message(sprintf("  power %s, %.3f s/replicate", if (is.null(r$power)) "(curve)" else format(r$power),
                  r$s_per_replicate))
  write_out(results, (proc.time() - t_all)[["elapsed"]], FALSE)
}
write_out(results, (proc.time() - t_all)[["elapsed"]], TRUE)
message("wrote ", out_path)

# Kenward-Roger reference values for tests/lmm/test_kenward_roger.py.
#
# Usage (from the repository root):
#   Rscript --vanilla tests/reference/kenward_roger.R
# writes tests/reference/kenward_roger.json: for each case, the REML fit's
# fixed effects, pbkrtest's Kenward-Roger adjusted covariance (vcovAdj), and for
# each contrast L (one row): lmerTest's ddf = "Kenward-Roger" t test
# (contest1D: estimate, se, df, t) and pbkrtest's KRmodcomp F test of L beta = 0
# (F scaled, ddf, scaling, p).  R 4.2.2, lme4 1.1-31, lmerTest 3.1-3, pbkrtest 0.5.x.
# The simulated case is written to tests/reference/data/kr_paired.csv.

suppressPackageStartupMessages({
  library(lme4)
  library(lmerTest)
  library(pbkrtest)
  library(jsonlite)
})

file_arg <- grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)
script_dir <- if (length(file_arg)) dirname(normalizePath(sub("^--file=", "", file_arg))) else "tests/reference"
data_dir <- file.path(script_dir, "data")

set.seed(13)
nw <- 3; ni <- 20
d <- expand.grid(worker = sprintf("w%d", 1:nw), item = sprintf("i%02d", 1:ni), system = c("A", "B"),
                 stringsAsFactors = FALSE)
x <- ifelse(d$system == "A", -1, 1)
wi <- rnorm(nw, 0, 0.05); ws <- rnorm(nw, 0, 0.11)
ii <- rnorm(ni, 0, 0.04); is <- rnorm(ni, 0, 0.14)
wk <- match(d$worker, sprintf("w%d", 1:nw)); ik <- match(d$item, sprintf("i%02d", 1:ni))
d$x <- x
d$rating <- round(0.5 + wi[wk] + ii[ik] + (0.03 + ws[wk] + is[ik]) * x + rnorm(nrow(d), 0, 0.26), 6)
write.csv(d, file.path(data_dir, "kr_paired.csv"), row.names = FALSE)

ss <- read.csv(file.path(data_dir, "sleepstudy.csv"))
ss$Subject <- factor(ss$Subject)
d <- read.csv(file.path(data_dir, "kr_paired.csv"))
d$worker <- factor(d$worker); d$item <- factor(d$item)

cases <- list(
  list(name = "sleepstudy", data = ss, formula = "Reaction ~ Days + (Days | Subject)"),
  list(name = "sleepstudy_dbar", data = ss, formula = "Reaction ~ Days + (Days || Subject)"),
  list(name = "kr_paired", data = d, formula = "rating ~ x + (1 + x || worker) + (1 + x || item)")
)

out <- lapply(cases, function(cs) {
  m <- lmerTest::lmer(as.formula(cs$formula), data = cs$data, REML = TRUE)
  m4 <- as(m, "lmerMod")
  p <- length(fixef(m))
  Va <- as.matrix(vcovAdj(m4))
  Lrow <- c(0, 1)
  ct <- contest1D(m, Lrow, ddf = "Kenward-Roger")
  m0 <- update(m4, as.formula(paste(". ~ . -", names(fixef(m))[2])))
  kr <- KRmodcomp(m4, matrix(Lrow, nrow = 1))
  list(name = cs$name, formula = cs$formula, fixef = as.list(fixef(m)),
       theta = as.vector(getME(m, "theta")), sigma = sigma(m),
       vcov = as.vector(as.matrix(vcov(m))), vcov_adj = as.vector(Va),
       L = Lrow, t_estimate = ct$Estimate, t_se = ct[["Std. Error"]], t_df = ct$df,
       t_value = ct[["t value"]], t_p = ct[["Pr(>|t|)"]],
       F = kr$test["Ftest", "stat"], F_ddf = kr$test["Ftest", "ddf"],
       F_scaling = kr$test["Ftest", "F.scaling"], F_p = kr$test["Ftest", "p.value"])
})
writeLines(toJSON(list(lme4 = as.character(packageVersion("lme4")),
                       lmerTest = as.character(packageVersion("lmerTest")),
                       pbkrtest = as.character(packageVersion("pbkrtest")), cases = out),
                  auto_unbox = TRUE, digits = I(15)),
           file.path(script_dir, "kenward_roger.json"))

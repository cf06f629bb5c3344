# lme4's predict.merMod on new data, for nlpower's GlmmFit.predict(newdata=...) (tests/glmm/).
#
# Usage (from the repository root):
#
#   Rscript --vanilla tests/reference/glmer_predict_reference.R
#
# reads the data sets glmer_reference.R wrote to tests/reference/data/, fits three of its
# cases with lme4's defaults and writes tests/reference/glmer_predict_reference.json: per
# case the new data (rows with known and new levels of each grouping factor), lme4's
# predictions on the link and response scales with every random effect
# (allow.new.levels = TRUE: a new level's random effects are 0), without them
# (re.form = NA), with one term only (re.form given), and whether predict refuses the
# new levels by default (allow.new.levels = FALSE).  Checked with R 4.2.2, lme4 1.1-31.

suppressPackageStartupMessages({
  library(lme4)
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
as_new <- function(nd, factors) {
  for (v in factors) nd[[v]] <- as.character(nd[[v]])
  nd
}

cases <- list()
one <- function(name, fit, newdata, re_one) {
  refuses <- inherits(try(predict(fit, newdata = newdata), silent = TRUE), "try-error")
  cases[[name]] <<- list(
    formula = deparse1(formula(fit)),
    newdata = newdata,
    link = unname(predict(fit, newdata = newdata, allow.new.levels = TRUE)),
    response = unname(predict(fit, newdata = newdata, type = "response", allow.new.levels = TRUE)),
    link_fixed = unname(predict(fit, newdata = newdata, re.form = NA)),
    response_fixed = unname(predict(fit, newdata = newdata, re.form = NA, type = "response")),
    re_one = re_one,
    link_one = unname(predict(fit, newdata = newdata, re.form = as.formula(re_one),
                              allow.new.levels = TRUE)),
    refuses_new_levels = refuses,
    loglik = as.numeric(logLik(fit)),
    fixef = as.list(fixef(fit)))
}

cb <- read("cbpp", c("herd", "period"))
m <- glmer(cbind(incidence, size - incidence) ~ period + (1 | herd), data = cb, family = binomial)
nd <- data.frame(period = c("1", "4", "2", "3", "1"), herd = c("1", "7", "15", "99", "3"),
                 stringsAsFactors = FALSE)
one("cbpp", m, nd, "~ (1 | herd)")

cs <- read("glmm_crossed", c("worker", "item"))
m <- glmer(y ~ x + (1 + x || worker) + (1 + x || item), data = cs, family = binomial)
nd <- data.frame(worker = c("w01", "w60", "w99", "w05", "w98"),
                 item = c("i01", "i77", "i40", "i20", "i99"),
                 x = c(0.5, -0.5, 0.5, -0.5, 0.25), stringsAsFactors = FALSE)
one("crossed_sim", m, nd, "~ (1 | worker)")

va <- read("VerbAgg", c("Gender", "btype", "situ", "id", "item"))
va$r2 <- factor(va$r2, levels = c("N", "Y"))
m <- glmer(r2 ~ Anger + Gender + btype + situ + (1 | id) + (1 | item), data = va,
           family = binomial)
nd <- data.frame(Anger = c(20, 11, 35, 14), Gender = c("M", "F", "F", "M"),
                 btype = c("curse", "scold", "shout", "scold"), situ = c("other", "self", "self", "other"),
                 id = c("1", "2", "9999", "316"),
                 item = c("S1WantCurse", "S2DoScold", "S4WantShout", "S3DoScold"),
                 stringsAsFactors = FALSE)
one("verbagg_crossed", m, nd, "~ (1 | item)")

out <- list(lme4 = as.character(packageVersion("lme4")), R = R.version.string, cases = cases)
writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, pretty = TRUE),
           file.path(script_dir, "glmer_predict_reference.json"))

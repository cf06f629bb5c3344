# Bootstrap reference for tests/inference/test_reference.py: lme4's
# confint(method = "boot") (parametric bootstrap, percentile intervals) on
# sleepstudy, Reaction ~ Days + (1 | Subject), REML, nsim = 2000, seed 1.
#
# Usage (from the repository root):
#   Rscript --vanilla tests/reference/inference_boot_reference.R
# writes tests/reference/inference_boot_reference.json.  The test compares
# nlpower's bootstrap intervals with these within their combined Monte Carlo error.

suppressPackageStartupMessages({
  library(lme4)
  library(jsonlite)
})

file_arg <- grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)
script_dir <- if (length(file_arg)) dirname(normalizePath(sub("^--file=", "", file_arg))) else "tests/reference"
ss <- read.csv(file.path(script_dir, "data", "sleepstudy.csv"))
ss$Subject <- factor(ss$Subject)
m <- lmer(Reaction ~ Days + (1 | Subject), ss)
nsim <- 2000
ci <- confint(m, method = "boot", nsim = nsim, boot.type = "perc", seed = 1)
out <- list(versions = list(R = R.version.string, lme4 = as.character(packageVersion("lme4"))),
            nsim = nsim, names = rownames(ci), lower = unname(ci[, 1]), upper = unname(ci[, 2]))
write_json(out, file.path(script_dir, "inference_boot_reference.json"), digits = NA,
           auto_unbox = TRUE, pretty = TRUE)
cat("wrote", file.path(script_dir, "inference_boot_reference.json"), "\n")

# Reference values for nlpower.paired (tests/paired/test_reference_r.py).
# Run: Rscript --vanilla tests/reference/paired_reference.R > tests/reference/paired_reference.json
# Base R only (stats + jsonlite).
#
# Data:
#  * Hollander & Wolfe (1973), p. 29, Table 3.1: Hamilton depression scale at the
#    first (x) and second (y) visit of 9 patients (the example of R's ?wilcox.test);
#  * Student (1908) / Cushny & Peebles: R's `sleep` data, extra sleep under drug 1
#    and drug 2 for 10 patients (paired t test, the example of R's ?t.test).
suppressMessages(library(jsonlite))
x <- c(1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30)
y <- c(0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29)
drug1 <- sleep$extra[sleep$group == 1]
drug2 <- sleep$extra[sleep$group == 2]

wil <- function(a, b, alt) {
  r <- wilcox.test(a, b, paired = TRUE, conf.int = TRUE, alternative = alt, exact = TRUE)
  list(statistic = unname(r$statistic), pvalue = r$p.value,
       ci = unname(as.numeric(r$conf.int)), estimate = unname(r$estimate))
}
tt <- function(a, b, alt) {
  r <- t.test(a, b, paired = TRUE, alternative = alt)
  list(statistic = unname(r$statistic), pvalue = r$p.value,
       ci = unname(as.numeric(r$conf.int)), estimate = unname(r$estimate))
}
sgn <- function(a, b, alt) {
  d <- a - b
  r <- binom.test(sum(d > 0), sum(d != 0), 0.5, alternative = alt)
  list(statistic = unname(r$statistic), pvalue = r$p.value)
}
alts <- c("two.sided", "greater", "less")
names(alts) <- c("two-sided", "greater", "less")
out <- list(
  depression = list(x = x, y = y,
                    wilcoxon = lapply(alts, function(a) wil(x, y, a)),
                    t = lapply(alts, function(a) tt(x, y, a)),
                    sign = lapply(alts, function(a) sgn(x, y, a))),
  sleep = list(drug1 = drug1, drug2 = drug2,
               t = lapply(alts, function(a) tt(drug1, drug2, a)),
               sign = lapply(alts, function(a) sgn(drug1, drug2, a))),
  power_t_test = list(
    list(delta = 0.5, sd = 1, power = 0.8, sig.level = 0.05, alternative = "two-sided",
         n = power.t.test(delta = 0.5, sd = 1, power = 0.8, type = "paired")$n),
    list(delta = 0.2, sd = 1.3, power = 0.9, sig.level = 0.01, alternative = "greater",
         n = power.t.test(delta = 0.2, sd = 1.3, power = 0.9, sig.level = 0.01,
                          type = "paired", alternative = "one.sided")$n),
    list(delta = 0.1, sd = 0.25, n = 30, sig.level = 0.05, alternative = "two-sided",
         power = power.t.test(n = 30, delta = 0.1, sd = 0.25, type = "paired", strict = FALSE)$power)
  ),
  R_version = R.version.string
)
cat(toJSON(out, auto_unbox = TRUE, digits = NA, pretty = TRUE), "\n")

# Reference values for nlpower.accuracy from base R's power.prop.test
# (two-sample comparison of proportions; n is the number in *each* group,
# strict = FALSE, two-sided), as used for Card et al. (2020) App. E.5 and the
# "MDE Binomial" column of Table 9.
#
# Run from the repository root:
#   Rscript tests/reference/accuracy_reference.R
# writes tests/reference/accuracy_reference.json (committed).
suppressMessages(library(jsonlite))

tol <- 1e-12   # power.prop.test's uniroot tolerance (default .Machine$double.eps^0.25)

power_cases <- list(
  list(n = 500, p1 = 0.80, p2 = 0.82),
  list(n = 1725, p1 = 0.92, p2 = 0.944),
  list(n = 147, p1 = 0.945, p2 = 0.99),
  list(n = 100, p1 = 0.50, p2 = 0.75, sig.level = 0.01),
  list(n = 9796, p1 = 0.916, p2 = 0.92)
)
power_out <- lapply(power_cases, function(a) {
  sig <- if (is.null(a$sig.level)) 0.05 else a$sig.level
  r <- power.prop.test(n = a$n, p1 = a$p1, p2 = a$p2, sig.level = sig)
  list(n = a$n, p1 = a$p1, p2 = a$p2, sig_level = sig, power = r$power)
})

# Table 9 binomial column: solve for p2 > p1 at power 0.8
table9 <- data.frame(
  task = c("WNLI", "MRPC", "SST-2", "RTE", "QNLI", "MNLI-m", "MNLI-mm", "QQP", "SQuAD 2.0"),
  n = c(147, 1725, 1821, 3000, 5463, 9796, 9847, 390965, 8862),
  p1 = c(0.945, 0.920, 0.972, 0.917, 0.975, 0.916, 0.913, 0.910, 0.90724)
)
p2_out <- lapply(seq_len(nrow(table9)), function(i) {
  r <- power.prop.test(n = table9$n[i], p1 = table9$p1[i], power = 0.8, tol = tol)
  list(task = table9$task[i], n = table9$n[i], p1 = table9$p1[i], power = 0.8, p2 = r$p2)
})

n_cases <- list(
  list(p1 = 0.80, p2 = 0.82, power = 0.8),
  list(p1 = 0.50, p2 = 0.60, power = 0.9),
  list(p1 = 0.92, p2 = 0.95, power = 0.8)
)
n_out <- lapply(n_cases, function(a) {
  r <- power.prop.test(p1 = a$p1, p2 = a$p2, power = a$power, tol = tol)
  list(p1 = a$p1, p2 = a$p2, power = a$power, n = r$n)
})

out <- list(
  source = "R power.prop.test (stats)",
  r_version = R.version.string,
  power = power_out,
  p2 = p2_out,
  n = n_out
)
write_json(out, "tests/reference/accuracy_reference.json", auto_unbox = TRUE, digits = NA,
           pretty = TRUE)
cat("wrote tests/reference/accuracy_reference.json\n")

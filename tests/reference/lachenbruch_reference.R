# Reference values for nlpower.accuracy's Lachenbruch (1992) MDE with formula="biostatuzh":
# the sample size n = (z_{alpha/2} + z_beta)^2 psi / delta^2 of biostatUZH's
# sampleSizeMcNemar (written out here from its documented formula, not copied), with the
# both-correct probability p11 on R's seq(min(p1, p2), p1 + p2 - 1, by = -1e-4) grid:
# psi = p1 + p2 - 2 p11 at the grid's first point (lower), its median element (mid) and
# its last point (upper).  The MDE solves n(delta) = N by uniroot, for the nine rows of
# Card et al. (2020) Table 9.
#
# Run from the repository root:
#   Rscript tests/reference/lachenbruch_reference.R
# writes tests/reference/lachenbruch_reference.json (committed).
suppressMessages(library(jsonlite))

psi_at <- function(p1, p2, bound) {
  p11 <- sort(seq(min(p1, p2), max(p1 + p2 - 1, 0), by = -1e-4))
  k <- switch(bound, lower = length(p11), upper = 1, mid = median(seq_along(p11)))
  p1 + p2 - 2 * p11[k]     # R truncates a fractional index, as sampleSizeMcNemar's does
}

n_needed <- function(delta, sota, bound, alpha = 0.05, power = 0.8) {
  (qnorm(1 - alpha / 2) + qnorm(power))^2 * psi_at(sota, sota + delta, bound) / delta^2
}

rows <- list(list("WNLI", 147, 0.945), list("MRPC", 1725, 0.920), list("SST-2", 1821, 0.972),
             list("RTE", 3000, 0.917), list("QNLI", 5463, 0.975), list("MNLI-m", 9796, 0.916),
             list("MNLI-mm", 9847, 0.913), list("QQP", 390965, 0.910),
             list("SQuAD 2.0", 8862, 0.90724))
out <- lapply(rows, function(r) {
  mde <- sapply(c("lower", "mid", "upper"), function(b) {
    uniroot(function(d) n_needed(d, r[[3]], b) - r[[2]], c(1e-7, 1 - r[[3]] - 1e-9),
            tol = 1e-12)$root
  })
  list(task = r[[1]], n = r[[2]], sota = r[[3]], lower = unname(mde["lower"]),
       mid = unname(mde["mid"]), upper = unname(mde["upper"]))
})
writeLines(toJSON(list(generated_by = "tests/reference/lachenbruch_reference.R",
                       r_version = R.version.string, table9 = out),
                  auto_unbox = TRUE, digits = NA, pretty = TRUE),
           "tests/reference/lachenbruch_reference.json")

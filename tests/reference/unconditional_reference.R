# Reference values for nlpower.accuracy.unconditional: Suissa & Shuster's (1991) exact
# unconditional McNemar test, computed here independently in base R by enumerating, for
# every number of discordant pairs d, every split (x, d - x):
#
#   p(b, c; n) = max over psi of  sum_d dbinom(d, n, psi) *
#                sum_x dbinom(x, d, 1/2) 1(|2x - d| / sqrt(d) >= |b - c| / sqrt(b + c))
#
# with psi on a grid of 20,001 points refined by optimize() around the best one; and the
# size of the region {|Z| >= z} for the critical values.
#
# Run from the repository root:
#   Rscript tests/reference/unconditional_reference.R
# writes tests/reference/unconditional_reference.json (committed).
suppressMessages(library(jsonlite))

tail_by_d <- function(n, z) {
  sapply(0:n, function(d) {
    if (d == 0) return(0)
    x <- 0:d
    sum(dbinom(x, d, 0.5)[abs(2 * x - d) / sqrt(d) >= z - 1e-12])
  })
}

sup_size <- function(n, z) {
  g <- tail_by_d(n, z)
  size <- function(psi) sum(dbinom(0:n, n, psi) * g)
  grid <- seq(0, 1, length.out = 20001)
  vals <- vapply(grid, size, numeric(1))
  k <- which.max(vals)
  lo <- grid[max(k - 1, 1)]
  hi <- grid[min(k + 1, length(grid))]
  opt <- optimize(size, c(lo, hi), maximum = TRUE, tol = 1e-12)
  max(vals[k], opt$objective)
}

pvalue <- function(b, c, n) {
  if (b == c) return(1)
  sup_size(n, abs(b - c) / sqrt(b + c))
}

tables <- list(c(1, 7, 21), c(6, 16, 161), c(0, 5, 12), c(3, 11, 30), c(2, 9, 25),
               c(10, 2, 15), c(25, 2, 102))
p_out <- lapply(tables, function(t) list(b = t[1], c = t[2], n = t[3],
                                         pvalue = pvalue(t[1], t[2], t[3])))

# sizes of {|Z| >= z} at a few z, for the critical-value tests
size_cases <- list(c(21, 2.0), c(40, 1.95), c(147, 2.0), c(147, 1.98))
s_out <- lapply(size_cases, function(s) list(n = s[1], z = s[2], size = sup_size(s[1], s[2])))

out <- list(
  generated_by = "tests/reference/unconditional_reference.R",
  r_version = R.version.string,
  pvalues = p_out,
  sizes = s_out
)
writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, pretty = TRUE),
           "tests/reference/unconditional_reference.json")

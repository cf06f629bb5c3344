# Reference values of ordinal::clmm / clm for tests/ordinal/test_clmm_reference.py.
# Run from the repository root:  Rscript --vanilla tests/reference/clmm_reference.R
# Writes tests/reference/clmm_reference.json and the simulated data under tests/reference/data/.
suppressMessages({library(ordinal); library(jsonlite)})
dir <- "tests/reference"
write.csv(wine, file.path(dir, "data/wine.csv"), row.names = FALSE)
write.csv(soup, file.path(dir, "data/soup.csv"), row.names = FALSE)

# simulated single-grouping Likert ratings: 40 workers x 15 ratings, large worker SD (2)
set.seed(20)
nw <- 40; per <- 15
sim <- data.frame(worker = factor(rep(sprintf("w%02d", 1:nw), each = per)),
                  system = factor(rep(c("A", "B", "C"), length.out = nw * per)),
                  x = round(rnorm(nw * per), 3))
lat <- 0.6 * (sim$system == "B") - 0.4 * (sim$system == "C") + 0.5 * sim$x +
  rep(rnorm(nw, sd = 2), each = per) + rlogis(nw * per)
sim$rating <- as.integer(cut(lat, c(-Inf, -2.5, -0.8, 0.8, 2.5, Inf)))
write.csv(sim, file.path(dir, "data/clmm_sim1.csv"), row.names = FALSE)

# slopes: 30 workers x 20 ratings, (1 + x | worker)
set.seed(21)
nw <- 30; per <- 20
sim2 <- data.frame(worker = factor(rep(sprintf("w%02d", 1:nw), each = per)),
                   x = round(rnorm(nw * per), 3))
b0 <- rnorm(nw, sd = 1.2); b1 <- 0.5 * b0 / 1.2 * 0.6 + rnorm(nw, sd = 0.4)
sim2$rating <- as.integer(cut(0.7 * sim2$x + rep(b0, each = per) + rep(b1, each = per) * sim2$x +
                                rlogis(nw * per), c(-Inf, -2, -0.5, 0.5, 2, Inf)))
write.csv(sim2, file.path(dir, "data/clmm_sim2.csv"), row.names = FALSE)

cases <- list(
  list(name = "wine_clm", data = "wine", formula = "rating ~ temp + contact"),
  list(name = "wine_clm_symmetric", data = "wine", formula = "rating ~ temp + contact",
       threshold = "symmetric"),
  list(name = "wine_laplace", data = "wine", formula = "rating ~ temp + contact + (1|judge)"),
  list(name = "wine_agq10", data = "wine", formula = "rating ~ temp + contact + (1|judge)",
       nAGQ = 10),
  list(name = "wine_probit_equidistant", data = "wine",
       formula = "rating ~ temp + contact + (1|judge)", link = "probit", threshold = "equidistant"),
  list(name = "wine_crossed", data = "wine",
       formula = "rating ~ temp + contact + (1|judge) + (1|bottle)"),
  list(name = "soup_laplace", data = "soup", formula = "SURENESS ~ PROD + (1|RESP)"),
  list(name = "sim1_laplace", data = "clmm_sim1", formula = "rating ~ system + x + (1|worker)"),
  # ordinal 2022.11-16's clmm swaps cloglog and loglog in its likelihood: clmm(link = "loglog")
  # maximises the cloglog likelihood P(Y <= j) = 1 - exp(-exp(theta_j - eta)) (clm is right);
  # the check below integrates the cloglog likelihood numerically at both fits.
  list(name = "sim1_cloglog", data = "clmm_sim1", formula = "rating ~ system + x + (1|worker)",
       link = "cloglog", r_link = "loglog"),
  list(name = "sim2_slopes", data = "clmm_sim2", formula = "rating ~ x + (1 + x|worker)")
)

# the cloglog marginal likelihood of a (1 | worker) fit by numerical integration per worker
integrated_cloglog <- function(fm, d) {
  Fc <- function(x) 1 - exp(-exp(x))
  X <- model.matrix(~ system + x, d)[, -1]
  eta <- drop(X %*% fm$beta); y <- as.integer(d$rating); cuts <- c(-Inf, fm$alpha, Inf)
  s <- sqrt(VarCorr(fm)[[1]][1, 1]); ll <- 0
  for (w in unique(d$worker)) {
    i <- d$worker == w
    g <- function(u) sapply(u, function(uu)
      prod(Fc(cuts[y[i] + 1] - eta[i] - s * uu) - Fc(cuts[y[i]] - eta[i] - s * uu)) * dnorm(uu))
    ll <- ll + log(integrate(g, -9, 9, rel.tol = 1e-10)$value)
  }
  ll
}

frames <- list(wine = wine, soup = soup, clmm_sim1 = sim, clmm_sim2 = sim2)
out <- list(R = R.version.string, ordinal = as.character(packageVersion("ordinal")), cases = list())
for (cs in cases) {
  d <- frames[[cs$data]]
  resp <- all.vars(as.formula(cs$formula))[1]
  d[[resp]] <- factor(d[[resp]], ordered = TRUE)
  link <- if (is.null(cs$link)) "logit" else cs$link
  thr <- if (is.null(cs$threshold)) "flexible" else cs$threshold
  nagq <- if (is.null(cs$nAGQ)) 1L else cs$nAGQ
  mixed <- grepl("|", cs$formula, fixed = TRUE)
  t0 <- proc.time()[["elapsed"]]
  rlink <- if (is.null(cs$r_link)) link else cs$r_link
  fm <- if (mixed) clmm(as.formula(cs$formula), data = d, link = rlink, threshold = thr, nAGQ = nagq)
        else clm(as.formula(cs$formula), data = d, link = link, threshold = thr)
  secs <- proc.time()[["elapsed"]] - t0
  co <- coef(fm)
  se <- sqrt(diag(vcov(fm)))[names(co)]
  res <- list(name = cs$name, data = cs$data, formula = cs$formula, link = link, threshold = thr,
              nAGQ = nagq, loglik = as.numeric(logLik(fm)), alpha = as.list(fm$alpha),
              beta = as.list(fm$beta), se = as.list(se), seconds = secs,
              cond_H = fm$cond.H, converged = fm$optRes$convergence == 0 || !mixed)
  if (mixed) {
    vc <- VarCorr(fm)
    res$sd <- lapply(vc, function(m) as.list(sqrt(diag(m))))
    res$cor <- lapply(vc, function(m) if (nrow(m) > 1) cov2cor(m)[2, 1] else NULL)
  }
  if (!is.null(cs$r_link)) {
    res$r_link <- rlink
    res$integrated_loglik <- integrated_cloglog(fm, d)
    bad <- clmm(as.formula(cs$formula), data = d, link = link, threshold = thr)
    res$clmm_cloglog <- list(reported_loglik = as.numeric(logLik(bad)), alpha = as.list(bad$alpha),
                             beta = as.list(bad$beta), sd = sqrt(diag(VarCorr(bad)[[1]]))[[1]],
                             integrated_loglik = integrated_cloglog(bad, d))
  }
  out$cases[[cs$name]] <- res
  cat(cs$name, format(res$loglik, digits = 10), secs, "\n")
}
writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, pretty = TRUE, null = "null"),
           file.path(dir, "clmm_reference.json"))

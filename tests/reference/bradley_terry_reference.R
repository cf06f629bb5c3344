# Reference values for nlpower.arena (tests/arena/test_reference.py).
# Run: Rscript --vanilla tests/reference/bradley_terry_reference.R > tests/reference/bradley_terry_reference.json
# Needs BradleyTerry2, ordinal, sandwich and jsonlite.
#
# Data (all shipped with BradleyTerry2, exported here so the tests need no R):
#  * citations: Stigler (1994), cross-citations of four statistics journals
#    (winner = the cited journal); Bradley-Terry without ties, BTm;
#  * baseball: Agresti (2002), 1987 American League East, home/away wins;
#    Bradley-Terry with a home (first-listed) advantage, BTm as in the vignette;
#  * football, season 2008-9: English Premier League results (1 home win,
#    0 draw, -1 away win); ties by
#      - Davidson (1970): a Poisson log-linear model with one stratum per match
#        (glm), log mu = stratum + (s_home - s_away + pos)/2 for a home win,
#        -(...)/2 for an away win, tau for a draw (nu = exp(tau));
#      - Rao-Kupper (1967): a cumulative-logit model (ordinal::clm) with
#        thresholds -pos - eta and eta - pos; without the home effect the matches
#        enter twice, once flipped, with weight 1/2 (the MLE then has pos = 0);
#    and Bradley-Terry with draws dropped, model-based and sandwich (HC0)
#    covariances (glm + sandwich::sandwich), one row per match.
suppressMessages({
  library(BradleyTerry2); library(ordinal); library(sandwich); library(jsonlite)
})

scores <- function(est, se, names) list(names = names, estimate = unname(est), se = unname(se))

## citations: BTm
data(citations)
cit <- countsToBinomial(citations)
m_cit <- BTm(cbind(win1, win2), player1, player2, ~ journal, id = "journal", data = cit)
cit_levels <- levels(cit$player1)
cit_est <- c(0, coef(m_cit)); cit_se <- c(0, sqrt(diag(vcov(m_cit))))

## baseball: BTm with a home advantage
data(baseball)
bb <- baseball
bb_levels <- levels(bb$home.team)
bb$home.team <- data.frame(team = baseball$home.team, at.home = 1)
bb$away.team <- data.frame(team = baseball$away.team, at.home = 0)
m_bb <- BTm(cbind(home.wins, away.wins), home.team, away.team,
            formula = ~ team + at.home, id = "team", data = bb)
bb_coef <- coef(m_bb); bb_se <- sqrt(diag(vcov(m_bb)))
is_team <- grepl("^team", names(bb_coef))

## football 2008-9
data(football)
fb <- subset(football, season == "2008-9")
fb$home <- as.character(fb$home); fb$away <- as.character(fb$away)
teams <- sort(unique(c(fb$home, fb$away)))
n <- nrow(fb)
design <- function(h, a) {
  X <- matrix(0, length(h), length(teams), dimnames = list(NULL, teams))
  X[cbind(seq_along(h), match(h, teams))] <- 1
  X[cbind(seq_along(a), match(a, teams))] <- -1
  X[, -1, drop = FALSE]
}
X <- design(fb$home, fb$away)

davidson <- function(position) {
  # three rows per match: home win, away win, draw
  rows <- rbind(X / 2, -X / 2, 0 * X)
  pos <- c(rep(0.5, n), rep(-0.5, n), rep(0, n))
  tie <- c(rep(0, 2 * n), rep(1, n))
  count <- c(fb$result == 1, fb$result == -1, fb$result == 0) * 1
  stratum <- factor(rep(seq_len(n), 3))
  m <- if (position) glm(count ~ 0 + stratum + rows + pos + tie, family = poisson,
                         control = glm.control(epsilon = 1e-12, maxit = 100))
       else glm(count ~ 0 + stratum + rows + tie, family = poisson,
                control = glm.control(epsilon = 1e-12, maxit = 100))
  keep <- !grepl("^stratum", names(coef(m)))
  b <- coef(m)[keep]; s <- sqrt(diag(vcov(m)))[keep]
  k <- length(teams) - 1
  out <- list(scores = scores(c(0, b[1:k]), c(0, s[1:k]), teams),
              tie = list(estimate = unname(b["tie"]), se = unname(s["tie"])),
              loglik = as.numeric(logLik(m)) - 0)  # Poisson = multinomial up to a constant
  if (position) out$position <- list(estimate = unname(b["pos"]), se = unname(s["pos"]))
  out
}

rao_kupper <- function(position) {
  y <- factor(fb$result, levels = c(-1, 0, 1), ordered = TRUE)
  if (position) {
    m <- clm(y ~ X, link = "logit", control = clm.control(gradTol = 1e-10))
  } else {
    yy <- factor(c(fb$result, -fb$result), levels = c(-1, 0, 1), ordered = TRUE)
    XX <- rbind(X, -X)
    w <- rep(0.5, 2 * n)
    m <- clm(yy ~ XX, weights = w, link = "logit", control = clm.control(gradTol = 1e-10))
  }
  a <- m$alpha; b <- m$beta; V <- vcov(m)
  k <- length(teams) - 1
  # eta = (th2 - th1)/2, pos = -(th1 + th2)/2
  Jeta <- c(-0.5, 0.5); Jpos <- c(-0.5, -0.5)
  Va <- V[1:2, 1:2]
  out <- list(scores = scores(c(0, b), c(0, sqrt(diag(V))[-(1:2)]), teams),
              tie = list(estimate = unname((a[2] - a[1]) / 2),
                         se = sqrt(drop(t(Jeta) %*% Va %*% Jeta))),
              loglik = as.numeric(logLik(m)))
  if (position) out$position <- list(estimate = unname(-(a[1] + a[2]) / 2),
                                     se = sqrt(drop(t(Jpos) %*% Va %*% Jpos)))
  out
}

decisive <- fb$result != 0
m_bt <- glm(I(result == 1) ~ 0 + X, family = binomial, data = fb, subset = decisive,
            control = glm.control(epsilon = 1e-14, maxit = 100))
bt_dropped <- list(scores = scores(c(0, coef(m_bt)), c(0, sqrt(diag(vcov(m_bt)))), teams),
                   sandwich_se = c(0, unname(sqrt(diag(sandwich(m_bt))))))

out <- list(
  versions = list(R = R.version.string,
                  BradleyTerry2 = format(packageVersion("BradleyTerry2")),
                  ordinal = format(packageVersion("ordinal")),
                  sandwich = format(packageVersion("sandwich"))),
  citations = list(data = list(winner = as.character(cit$player1), loser = as.character(cit$player2),
                               win1 = cit$win1, win2 = cit$win2),
                   bt = scores(cit_est, cit_se, cit_levels)),
  baseball = list(data = list(home = as.character(baseball$home.team), away = as.character(baseball$away.team),
                              home_wins = baseball$home.wins, away_wins = baseball$away.wins),
                  bt = scores(c(0, bb_coef[is_team]), c(0, bb_se[is_team]), bb_levels),
                  position = list(estimate = unname(bb_coef["at.home"]), se = unname(bb_se["at.home"]))),
  football = list(data = list(home = fb$home, away = fb$away, result = fb$result),
                  davidson = davidson(FALSE), davidson_position = davidson(TRUE),
                  rao_kupper = rao_kupper(FALSE), rao_kupper_position = rao_kupper(TRUE),
                  bt_dropped = bt_dropped)
)
cat(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE), "\n")
